/**
 * In Chromium (SwiftShader WebGPU), the product's engine on every model family of the family
 * fixtures: `openModel` on the fixture's F32 GGUF as a picked `File` starts `WebGpuEngine` in
 * Kiln's Web Worker, and the page drives its `LLMEngine` (`KilnModel.engine`) as an app would.
 *
 * llama.cpp's logits are teacher-forced (README there), so the check is too: one greedy request
 * per prefix `tokens[0..p]`, all 50 in flight at once (batched by the engine), each generating
 * `STEPS` tokens with their top logprobs. Its first token must be llama.cpp's argmax of row `p`;
 * each later one is held to row `p + k` while every token the engine chose before it is the
 * fixture's next token (then its input is the fixture's, and llama.cpp's row applies); rows
 * whose top-2 margin is under `2 * LOGPROB_TOL` are counted but not held to an argmax. Every
 * reported logprob must be llama.cpp's log-softmax within `LOGPROB_TOL`.
 *
 * On one family (the MoE one: a batch's sequences route through the experts together) the page
 * also runs two requests at once against the same two alone, and aborts a stream midway.
 */
import { RequestContext } from "../../../src/contract/engine.ts";
import type { PreprocessedRequest, TopLogprob } from "../../../src/contract/types.ts";
import { validateStream } from "../../../src/contract/validate.ts";
import { type KilnModel, openModel } from "../../../src/worker/open.ts";
import { FAMILIES, type PageFixture, pageFixture } from "./family_files.ts";
import { runChecks } from "./report.ts";

/** Tokens each teacher-forced request generates: the prefill's, then a decode step's. */
const STEPS = 2;
/** Alternatives reported per token. */
const TOP = 4;
/** |Kiln's logprob - log-softmax of llama.cpp's logits| (GPU vs llama.cpp logits: 5e-3 at most). */
const LOGPROB_TOL = 1e-2;
/** The family that also runs concurrent requests and an abort. */
const BATCH_FAMILY = "qwen3moe";

interface Run {
  ids: number[];
  top: TopLogprob[][];
}

/** A greedy request through the engine's `LLMEngine` stream, checked by `validateStream`. */
async function greedy(model: KilnModel, prompt: number[], maxTokens: number): Promise<Run> {
  const request: PreprocessedRequest = {
    model: model.config.model,
    token_ids: prompt,
    stop_conditions: { max_tokens: maxTokens },
    sampling_options: { temperature: 0 },
    output_options: { logprobs: TOP },
    eos_token_ids: [],
    annotations: [],
  };
  const run: Run = { ids: [], top: [] };
  const stream = model.engine.generate(request, new RequestContext());
  for await (const c of validateStream(stream, { promptTokens: prompt.length })) {
    run.ids.push(...c.token_ids);
    run.top.push(...(c.top_logprobs ?? []));
  }
  if (run.ids.length !== maxTokens || run.top.length !== maxTokens) {
    throw new Error(`${run.ids.length} tokens, ${run.top.length} logprob lists of ${maxTokens}`);
  }
  return run;
}

/** llama.cpp's row: its argmax, top-2 margin and log-softmax. */
function row(logits: number[]) {
  let best = 0, second = -Infinity;
  logits.forEach((v, i) => {
    if (v > logits[best]!) [best, second] = [i, logits[best]!];
    else if (i !== best && v > second) second = v;
  });
  const max = logits[best]!;
  const logZ = max + Math.log(logits.reduce((s, v) => s + Math.exp(v - max), 0));
  return { argmax: best, margin: max - second, logprob: (id: number) => logits[id]! - logZ };
}

/** The rows of `run` (from prompt `tokens[0..p]`) llama.cpp has: step k reads row p + k. */
function heldRows(fx: PageFixture, p: number, run: Run): number {
  let k = 1;
  while (k < run.ids.length && p + k < fx.tokens.length && run.ids[k - 1] === fx.tokens[p + k]) k++;
  return k;
}

interface Tally {
  agreed: number;
  checked: number;
  decode: number;
  ties: number;
  maxErr: number;
  misses: string[];
}

/** Hold the steps of `run` (from `tokens[0..p]`) that llama.cpp's rows cover against them. */
function tally(fx: PageFixture, p: number, run: Run, t: Tally): void {
  for (let k = 0; k < heldRows(fx, p, run); k++) {
    const r = row(fx.reference.prompts[0]!.logits[p + k]!);
    for (const alt of run.top[k]!) {
      t.maxErr = Math.max(t.maxErr, Math.abs(alt.logprob - r.logprob(alt.token_id)));
    }
    if (r.margin < 2 * LOGPROB_TOL) {
      t.ties++;
      continue;
    }
    t.checked++;
    if (k > 0) t.decode++;
    if (run.ids[k] === r.argmax) t.agreed++;
    else t.misses.push(`row ${p + k}: ${run.ids[k]}, llama.cpp ${r.argmax}`);
  }
}

function verdict(t: Tally): string {
  const summary = `tokens agreed ${t.agreed}/${t.checked} (${t.decode} from decode steps; ` +
    `${t.ties} near-tie rows not held), max |logprob - llama.cpp| ${t.maxErr.toExponential(1)}`;
  if (t.checked === 0 || t.misses.length > 0 || !(t.maxErr <= LOGPROB_TOL)) {
    throw new Error(`${summary}; ${t.misses.join("; ")}`);
  }
  return summary;
}

/** Every prefix of the fixture's tokens at once, `STEPS` greedy tokens each. */
async function teacherForced(model: KilnModel, fx: PageFixture): Promise<string> {
  const runs = await Promise.all(
    fx.tokens.map((_, p) => greedy(model, fx.tokens.slice(0, p + 1), STEPS)),
  );
  const t: Tally = { agreed: 0, checked: 0, decode: 0, ties: 0, maxErr: 0, misses: [] };
  runs.forEach((run, p) => tally(fx, p, run, t));
  return verdict(t);
}

/**
 * Two requests alone, then both at once: the same tokens and logprobs, in fewer engine steps
 * than the two alone took, and each one's first tokens llama.cpp's.
 */
async function concurrent(model: KilnModel, fx: PageFixture): Promise<string> {
  const n = 8;
  const prompts = [fx.tokens.slice(0, 34), fx.tokens];
  const steps = async () => (await model.engine.stats())!.steps;
  const s0 = await steps();
  const alone = [await greedy(model, prompts[0]!, n), await greedy(model, prompts[1]!, n)];
  const s1 = await steps();
  const both = await Promise.all(prompts.map((p) => greedy(model, p, n)));
  const s2 = await steps();
  let drift = 0;
  both.forEach((run, i) => {
    const solo = alone[i]!;
    if (run.ids.join() !== solo.ids.join()) {
      throw new Error(`request ${i}: ${run.ids} at once, ${solo.ids} alone`);
    }
    run.top.forEach((alts, k) =>
      alts.forEach((a, j) =>
        drift = Math.max(drift, Math.abs(a.logprob - solo.top[k]![j]!.logprob))
      )
    );
  });
  if (!(drift < 1e-3)) throw new Error(`logprobs at once vs alone differ by ${drift}`);
  if (s2 - s1 >= s1 - s0) throw new Error(`${s2 - s1} steps at once, ${s1 - s0} alone`);
  const t: Tally = { agreed: 0, checked: 0, decode: 0, ties: 0, maxErr: 0, misses: [] };
  both.forEach((run, i) => tally(fx, prompts[i]!.length - 1, run, t));
  return `${n} tokens each, equal to alone (logprobs within ${drift.toExponential(1)}), ` +
    `${s2 - s1} engine steps at once vs ${s1 - s0} alone; llama.cpp: ${verdict(t)}`;
}

/**
 * `KilnModel.generate` with an `AbortSignal`, aborted after the first token: the stream ends
 * `cancelled` well before `max_tokens`, and the worker's engine holds no stream for it and counts
 * it cancelled; the next request gets llama.cpp's token, and after it the engine holds no KV
 * block (an aborted sequence's blocks are freed at the engine's next step).
 */
async function abortMidway(model: KilnModel, fx: PageFixture): Promise<string> {
  const max = 150;
  const stats = async () => (await model.engine.stats())!;
  const before = await stats();
  const ac = new AbortController();
  let tokens = 0, finish: string | undefined;
  const options = { max_tokens: max, temperature: 0, ignore_eos: true, signal: ac.signal };
  for await (const piece of model.generate(fx.tokens, options)) {
    tokens += piece.tokens;
    finish = piece.finish;
    if (tokens > 0) ac.abort();
  }
  const after = await stats();
  if (finish !== "cancelled" || tokens >= max) throw new Error(`${finish} after ${tokens}`);
  if (after.streams !== 0) throw new Error(`${after.streams} streams open`);
  if (after.requests.cancelled !== before.requests.cancelled + 1) {
    throw new Error(`cancelled ${before.requests.cancelled} -> ${after.requests.cancelled}`);
  }
  const next = await greedy(model, fx.tokens, 1);
  const want = row(fx.reference.prompts[0]!.logits[fx.tokens.length - 1]!).argmax;
  if (next.ids[0] !== want) throw new Error(`next request: ${next.ids[0]}, llama.cpp ${want}`);
  const idle = await stats();
  if (idle.usedBlocks !== 0 || idle.streams !== 0) {
    throw new Error(`idle: ${idle.usedBlocks} KV blocks in use, ${idle.streams} streams`);
  }
  return `cancelled after ${tokens} of ${max} tokens (${after.steps - before.steps} engine ` +
    `steps); the next request got llama.cpp's token in ${idle.steps - after.steps}, then no ` +
    `KV block in use`;
}

const checks = FAMILIES.flatMap((family) => {
  let opened: Promise<{ model: KilnModel; fx: PageFixture }> | undefined;
  const open = () =>
    opened ??= pageFixture(family).then(async (fx) => {
      const model = await openModel({ model: [await fx.gguf()] });
      return { model, fx };
    });
  const extra = family === BATCH_FAMILY
    ? [
      [`${family}: two requests at once equal the two alone`, concurrent] as const,
      [`${family}: abort midway frees the request`, abortMidway] as const,
    ]
    : [];
  const steps = [
    [
      `${family}: greedy from every prefix: llama.cpp's argmax and logprobs`,
      teacherForced,
    ] as const,
    ...extra,
  ];
  return steps.map(([name, fn], i) =>
    [name, async () => {
      const t0 = performance.now();
      const { model, fx } = await open();
      const t1 = performance.now();
      try {
        const s = (ms: number) => (ms / 1000).toFixed(1);
        const opening = i === 0 ? `opened in ${s(t1 - t0)} s, ` : "";
        return `${await fn(model, fx)} (${opening}ran in ${s(performance.now() - t1)} s)`;
      } finally {
        if (i === steps.length - 1) await model.close();
      }
    }] as const
  );
});

await runChecks(checks);
