/**
 * Speculative decoding's speedup (`deno task bench:spec`): each workload decoded with
 * speculation off, by prompt lookup, and (fortune) with a draft model, in one run on one
 * adapter, the tokens checked identical, with the acceptance. Writes
 * `bench/results/speculative-<adapter>.json` and an SVG beside it.
 *
 *   deno task bench:spec [--quick] [--models fortune,smollm2-135m] [--tokens 128] [--k 4,8]
 *                        [--fortune-draft FILE.gguf|none] [--out FILE]
 *
 * Fortune's draft model is llama.cpp's Q2_K quantization of it (the fixtures' GGUF): the same
 * tokenizer at about a third of the bytes, a draft as a user without a smaller trained sibling
 * would make one.
 *
 * Workloads: on fortune (trained weights) a repeated phrase the model goes on repeating, and
 * free text from a plain prompt, greedy; on SmolLM2-135M's shape (random F16 weights, so the
 * text means nothing) a repeated random prompt greedy, after which such a model repeats one
 * token (every draft is accepted: the mechanism's ceiling), and sampled text at temperature 1,
 * where drafts almost never hold (its floor: what looking for them costs). Batch 1, and 4
 * streams for the repetitive ones.
 *
 * @module
 */
import { acquireGpu, runtimeData } from "../../src/gpu/device.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";
import { type SpeculationCounts, speculativeSettings } from "../../src/engines/speculation.ts";
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { ensureCheckpoint } from "./checkpoint.ts";
import { KilnRunner, prompt } from "./kiln_runner.ts";
import { adapterSlug } from "../lib/adapter_slug.ts";

const { flags, fail } = runCli({
  name: "bench:spec",
  command: "deno task bench:spec",
  about: "Decode tokens/s with speculative decoding (prompt lookup) off and on, same run; " +
    "JSON and an SVG in bench/results/.",
  flags: {
    quick: { type: "boolean", help: "fortune alone, few tokens (checks the plumbing)" },
    models: { type: "list", arg: "NAME,...", help: "fortune and/or smollm2-135m (default both)" },
    tokens: { type: "integer", min: 8, help: "tokens per stream (default 128; --quick 24)" },
    k: { type: "list", arg: "K,...", help: "tokens drafted per step, rows for each (default 4)" },
    "fortune-draft": {
      type: "string",
      arg: "FILE",
      help: "fortune's draft model (default the fixtures' Q2_K GGUF; none: no draft-model rows)",
    },
    out: { type: "string", arg: "FILE", help: "the JSON (default bench/results/speculative-...)" },
  },
});
const quick = flags.quick;
const tokens = flags.tokens ?? (quick ? 24 : 128);
const models = flags.models ?? (quick ? ["fortune"] : ["fortune", "smollm2-135m"]);
const ks = (flags.k ?? ["4"]).map(Number);
const fortuneDraft = flags["fortune-draft"] === "none" ? undefined : flags["fortune-draft"] ??
  new URL("../../test/fixtures/llamacpp/fortune/Q2_K.gguf", import.meta.url).pathname;
for (const k of ks) {
  try {
    speculativeSettings({ method: "ngram", numSpeculativeTokens: k });
  } catch (e) {
    fail(`--k: ${(e as Error).message}`);
  }
}
const log = (line: string) => console.error(line);

/** One workload: its prompts (one per stream) and how tokens are chosen. */
interface Workload {
  name: string;
  prompts: number[][];
  sampled?: { temperature: number; seed: number };
}

const enc = (s: string) => [256, ...new TextEncoder().encode(s)];

function workloads(model: string, vocab: number): Workload[] {
  if (model === "fortune") {
    const phrases = ["la la ", "ho ho ", "na na ", "do re "];
    const repeated = (i: number) => enc(phrases[i]!.repeat(6).trimEnd());
    return [
      { name: "repetitive, greedy", prompts: [repeated(0)] },
      { name: "repetitive, greedy, 4 streams", prompts: [0, 1, 2, 3].map(repeated) },
      { name: "free text, greedy", prompts: [enc("The best way to predict the future is")] },
    ];
  }
  const repeated = (salt: number) => {
    const p = prompt(48, vocab, salt);
    return [...p, ...p, ...p];
  };
  return [
    { name: "repetitive, greedy", prompts: [repeated(1)] },
    { name: "repetitive, greedy, 4 streams", prompts: [1, 2, 3, 4].map(repeated) },
    {
      name: "free text, sampled (T=1)",
      prompts: [prompt(64, vocab, 9)],
      sampled: { temperature: 1, seed: 1 },
    },
  ];
}

/** One workload's figures with speculation off and on. */
interface Row {
  model: string;
  workload: string;
  /** `ngram` (prompt lookup) or `draft_model` (and the draft's file). */
  method: string;
  draft_model?: string;
  /** Tokens drafted per step. */
  k: number;
  streams: number;
  tokens_per_stream: number;
  off_tokens_per_s: number;
  on_tokens_per_s: number;
  speedup: number;
  /** Every stream's tokens the same with and without speculation. */
  identical: boolean;
  /** Accepted over verified draft tokens. */
  acceptance: number;
  /** Tokens per speculative step: 1 + accepted per draft. */
  mean_accepted_length: number;
  drafts: number;
}

const delta = (a: SpeculationCounts, b: SpeculationCounts) => ({
  drafts: a.numDrafts - b.numDrafts,
  draftTokens: a.numDraftTokens - b.numDraftTokens,
  accepted: a.numAcceptedTokens - b.numAcceptedTokens,
});

const gpu = await acquireGpu();
const adapter = gpu.caps.adapter;
log(`adapter: ${adapter}`);
const rows: Row[] = [];
for (const model of models) {
  const dir = model === "fortune"
    ? new URL("../../models/fortune/", import.meta.url).pathname
    : await ensureCheckpoint(model, { log });
  const config = JSON.parse(await Deno.readTextFile(`${dir}/config.json`));
  const loads = workloads(model, config.vocab_size);
  const longest = Math.max(...loads.flatMap((w) => w.prompts.map((p) => p.length)));
  // Keyed `workload:method:k`; `off:0` for speculation off.
  const results = new Map<string, Timing>();
  const draft = model === "fortune" ? fortuneDraft : undefined;
  const methods: Method[] = [
    { name: "off", k: 0 },
    ...ks.map((k): Method => ({ name: "ngram", k })),
    ...(draft ? ks.map((k): Method => ({ name: "draft_model", k })) : []),
  ];
  for (const { name: method, k } of methods) {
    const runner = new KilnRunner({
      gpu,
      kvPositions: 4 * 16 * Math.ceil((longest + tokens + 16) / 16),
      maxNumSeqs: 4,
      ...(method === "ngram" ? { speculative: { method, numSpeculativeTokens: k } } : {}),
      ...(method === "draft_model"
        ? { speculative: { method, model: dirFiles(draft!), numSpeculativeTokens: k } }
        : {}),
    });
    await runner.setup(dir);
    try {
      await runner.run([loads[0]!.prompts[0]!.slice(1)], 8); // first steps, off the clock
      for (const w of loads) {
        const before = structuredClone(runner.engine!.speculation);
        const t = await runner.run(w.prompts, tokens, undefined, w.sampled);
        const d = delta(runner.engine!.speculation, before);
        results.set(`${w.name}:${method}:${k}`, {
          tps: t.timed / t.seconds,
          streams: t.streams!,
          ...d,
        });
        const accepted = k > 0 ? `, ${d.accepted}/${d.draftTokens} drafts accepted` : "";
        log(
          `${model} ${w.name} ${k > 0 ? `${method} k=${k}` : "off"}: ` +
            `${(t.timed / t.seconds).toFixed(2)} tokens/s${accepted}`,
        );
      }
    } finally {
      await runner.close();
    }
  }
  for (const { name: method, k } of methods.slice(1)) {
    for (const w of loads) {
      const off = results.get(`${w.name}:off:0`)!;
      const on = results.get(`${w.name}:${method}:${k}`)!;
      rows.push({
        ...row(model, w, k, off, on),
        method,
        ...(method === "draft_model" ? { draft_model: draft!.split("/").pop()! } : {}),
      });
    }
  }
}

interface Method {
  name: "off" | "ngram" | "draft_model";
  k: number;
}

function row(
  model: string,
  w: Workload,
  k: number,
  off: Timing,
  on: Timing,
): Omit<Row, "method" | "draft_model"> {
  return {
    model,
    workload: w.name,
    k,
    streams: w.prompts.length,
    tokens_per_stream: tokens,
    off_tokens_per_s: off.tps,
    on_tokens_per_s: on.tps,
    speedup: on.tps / off.tps,
    identical: JSON.stringify(on.streams) === JSON.stringify(off.streams),
    acceptance: on.draftTokens > 0 ? on.accepted / on.draftTokens : 0,
    mean_accepted_length: on.drafts > 0 ? 1 + on.accepted / on.drafts : 1,
    drafts: on.drafts,
  };
}

interface Timing {
  tps: number;
  streams: number[][];
  drafts: number;
  draftTokens: number;
  accepted: number;
}

const report = {
  bench: "speculative",
  adapter,
  date: new Date().toISOString(),
  runtime: runtimeData(gpu.caps),
  settings: {
    ...speculativeSettings({ method: "ngram" }),
    k: ks,
    quick,
    tokens,
    ...(fortuneDraft ? { fortune_draft: fortuneDraft.split("/").pop() } : {}),
  },
  results: rows,
};
const out = flags.out ??
  new URL(`../results/speculative-${adapterSlug(adapter)}.json`, import.meta.url).pathname;
await Deno.writeTextFile(out, JSON.stringify(report, null, 2) + "\n");
for (const r of rows) {
  console.log(
    `${r.model.padEnd(13)} ${r.workload.padEnd(30)} ${r.method.padEnd(11)} k=${r.k} off ${
      r.off_tokens_per_s.toFixed(2).padStart(7)
    }` +
      `  on ${r.on_tokens_per_s.toFixed(2).padStart(7)}  ×${r.speedup.toFixed(2)}` +
      `  accepted ${(100 * r.acceptance).toFixed(0)}%  ${r.identical ? "identical" : "DIFFERENT"}`,
  );
}
log(`wrote ${out}`);
const chart = new Deno.Command(Deno.execPath(), {
  args: [
    "run",
    "-A",
    new URL("../chart.ts", import.meta.url).pathname,
    out,
    out.replace(/\.json$/, ".svg"),
  ],
}).outputSync();
if (!chart.success) throw new Error(new TextDecoder().decode(chart.stderr));
if (rows.some((r) => !r.identical)) Deno.exit(1);
