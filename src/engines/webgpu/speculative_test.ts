/**
 * Speculative decoding (prompt lookup) in `WebGpuEngine`: the same tokens as without it, greedy on
 * every fixture model and sampled seed for seed; the sampled distribution the model's (chi-square
 * against the float64 reference); stop conditions, logprobs, preemption and cancellation inside
 * verified drafts; the counters in Prometheus text.
 */
import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { EngineError } from "../../contract/errors.ts";
import type { PreprocessedRequest } from "../../contract/types.ts";
import { EngineMetrics } from "../../contract/metrics/engine_metrics.ts";
import { openCheckpoint } from "../../model/checkpoint.ts";
import { ReferenceModel } from "../../reference/model.ts";
import type { SpeculativeOptions } from "../speculation.ts";
import { WebGpuEngine } from "./engine.ts";
import { chiSquare, chiSquareCritical } from "../../../test/support/chi_square.ts";
import {
  bytes,
  collect,
  type Collected,
  FORTUNE,
  fortuneEngine,
  request,
} from "../../../test/support/fortune_engine.ts";
import { testGpu } from "../../../test/support/gpu.ts";
import {
  checkPreempted,
  engineOn,
  speculationFixtures,
} from "../../../test/support/speculation_fixtures.ts";

/** Drafts wherever the last token occurred before, so that most steps verify one. */
const EAGER: SpeculativeOptions = { method: "ngram", numSpeculativeTokens: 3, promptLookupMin: 1 };

Deno.test("greedy: the same tokens with and without speculation on every fixture model", async () => {
  let accepted = 0;
  for (const f of await speculationFixtures()) {
    const req = request(f.prompt, { model: f.name, stop_conditions: { max_tokens: 40 } });
    const plain = await engineOn(f.path, f.name, {});
    const want = await collect(plain, req).finally(() => plain.cleanup());
    const spec = await engineOn(f.path, f.name, { speculative: EAGER });
    try {
      const got = await collect(spec, req);
      deepStrictEqual(got.ids, want.ids, `${f.name}: speculation changed the greedy tokens`);
      equal(got.last.finish_reason, want.last.finish_reason);
      ok(spec.speculation.numDrafts > 0, `${f.name}: no draft was verified`);
      accepted += spec.speculation.numAcceptedTokens;
    } finally {
      await spec.cleanup();
    }
  }
  ok(accepted > 50, `drafts were accepted (${accepted}), not only rejected`);
});

Deno.test("greedy on the GPU's kernel paths (split decode attention over a draft's tokens): the same", async () => {
  const gpu = await testGpu("gpu");
  const models = (await speculationFixtures()).filter((f) => ["fortune", "qwen3"].includes(f.name));
  for (const f of models) {
    const req = request(f.prompt, { model: f.name, stop_conditions: { max_tokens: 40 } });
    const o = { gpu, kernelPaths: "gpu" } as const;
    const plain = await engineOn(f.path, f.name, o);
    const want = await collect(plain, req).finally(() => plain.cleanup());
    const spec = await engineOn(f.path, f.name, { ...o, speculative: EAGER });
    try {
      deepStrictEqual((await collect(spec, req)).ids, want.ids, f.name);
      ok(spec.speculation.numAcceptedTokens > 0, `${f.name}: a draft was accepted`);
    } finally {
      await spec.cleanup();
    }
  }
});

const TEMPERATURE = 1;
const SAMPLES = 2000;
const PROMPT = bytes("la la la la la la la");

function sampled(seed: number): PreprocessedRequest {
  return request(PROMPT, {
    stop_conditions: { max_tokens: 3 },
    sampling_options: { temperature: TEMPERATURE, seed },
  });
}

/** Softmax of `logits / TEMPERATURE`, in float64. */
function probs(logits: Float64Array): Float64Array {
  const max = Math.max(...logits);
  const e = logits.map((l) => Math.exp((l - max) / TEMPERATURE));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / sum);
}

async function sampleAll(e: WebGpuEngine): Promise<number[][]> {
  const out: number[][] = [];
  for (let at = 0; at < SAMPLES; at += 64) {
    const batch = Array.from({ length: Math.min(64, SAMPLES - at) }, (_, i) => at + i);
    out.push(...await Promise.all(batch.map(async (s) => (await collect(e, sampled(s))).ids)));
  }
  return out;
}

Deno.test("sampled: seed for seed the same tokens, and the model's distribution (chi-square)", async () => {
  const plain = await fortuneEngine({ maxNumSeqs: 16 });
  await plain.start(0n);
  const want = await sampleAll(plain).finally(() => plain.cleanup());
  const spec = await fortuneEngine({ maxNumSeqs: 16, speculative: EAGER });
  await spec.start(0n);
  const got = await sampleAll(spec).finally(() => spec.cleanup());
  const differ = got.filter((ids, i) => JSON.stringify(ids) !== JSON.stringify(want[i])).length;
  equal(differ, 0, `${differ} of ${SAMPLES} seeds drew other tokens with speculation`);
  ok(
    spec.speculation.numAcceptedTokens > SAMPLES / 8,
    "hundreds of third tokens came from a draft",
  );

  // The pair after the commonest first token, against the float64 model's own probabilities:
  // the second token's row is verified with the draft of the first, the third's with the second.
  const first = new Map<number, number>();
  for (const ids of got) first.set(ids[0]!, (first.get(ids[0]!) ?? 0) + 1);
  const [x1, n1] = [...first].sort((a, b) => b[1] - a[1])[0]!;
  ok(n1 > SAMPLES / 4, `the commonest first token came ${n1} times`);
  const checkpoint = await openCheckpoint(dirFiles(FORTUNE));
  const ref = await ReferenceModel.load(checkpoint.config, checkpoint.weights);
  const p2 = probs(ref.logits([...PROMPT, x1]).at(-1)!);
  const expected = new Map<string, number>();
  p2.forEach((p, x2) => {
    if (p * n1 < 0.5) {
      expected.set(`${x2}:rest`, p * n1);
      return;
    }
    const p3 = probs(ref.logits([...PROMPT, x1, x2]).at(-1)!);
    p3.forEach((q, x3) => expected.set(`${x2}:${x3}`, p * q * n1));
  });
  const observed = new Map<string, number>();
  for (const [a, b, c] of got) {
    if (a !== x1) continue;
    const key = expected.has(`${b}:${c}`) ? `${b}:${c}` : `${b}:rest`;
    observed.set(key, (observed.get(key) ?? 0) + 1);
  }
  const { stat, bins } = chiSquare(observed, expected);
  ok(bins >= 5, `only ${bins} bins`);
  const critical = chiSquareCritical(bins - 1);
  ok(stat < critical, `chi-square ${stat.toFixed(1)} >= ${critical.toFixed(1)} (${bins - 1} df)`);
});

/** Requests whose stops fall inside drafts; every chunk must match the engine without them. */
function stopCases(): PreprocessedRequest[] {
  const p = bytes("la la la la la la");
  const l = "l".charCodeAt(0), a = "a".charCodeAt(0);
  return [
    request(p, { stop_conditions: { max_tokens: 2 } }),
    request(p, { stop_conditions: { max_tokens: 7 } }),
    request(p, { stop_conditions: { max_tokens: 20, stop_token_ids: [a] } }),
    request(p, { stop_conditions: { max_tokens: 20, stop_token_ids_hidden: [l] } }),
    request(p, { stop_conditions: { max_tokens: 9, min_tokens: 6 }, eos_token_ids: [a] }),
    request(p, { stop_conditions: { max_tokens: 12 }, output_options: { logprobs: 2 } }),
    request(p, {
      stop_conditions: { max_tokens: 16 },
      sampling_options: { temperature: 0.8, seed: 7, repetition_penalty: 1.3, top_k: 5 },
    }),
    request(p, {
      stop_conditions: { max_tokens: 16 },
      sampling_options: { temperature: 0, frequency_penalty: 0.4, presence_penalty: 0.2 },
    }),
  ];
}

Deno.test("stops, min_tokens, logprobs and penalties inside verified drafts: the same chunks", async () => {
  const plain = await fortuneEngine();
  await plain.start(0n);
  const want: Collected[] = [];
  try {
    for (const r of stopCases()) want.push(await collect(plain, r));
  } finally {
    await plain.cleanup();
  }
  const spec = await fortuneEngine({ speculative: { method: "ngram", promptLookupMin: 1 } });
  await spec.start(0n);
  try {
    for (const [i, r] of stopCases().entries()) {
      const got = await collect(spec, r);
      const w = want[i]!;
      deepStrictEqual(got.ids, w.ids, `case ${i}: tokens`);
      deepStrictEqual(got.chunks.map((c) => c.finish_reason), w.chunks.map((c) => c.finish_reason));
      deepStrictEqual(got.last.completion_usage, w.last.completion_usage, `case ${i}: usage`);
      const lp = (c: typeof got) => c.chunks.flatMap((k) => k.log_probs ?? []);
      equal(lp(got).length, lp(w).length, `case ${i}: a logprob per token`);
      lp(got).forEach((v, j) => ok(Math.abs(v - lp(w)[j]!) < 1e-3, `case ${i}: logprob ${j}`));
      const top = (c: typeof got) => c.chunks.flatMap((k) => k.top_logprobs ?? []);
      deepStrictEqual(
        top(got).map((t) => t.map((x) => x.token_id)),
        top(w).map((t) => t.map((x) => x.token_id)),
      );
    }
    ok(spec.speculation.numAcceptedTokens > 10);
    equal(spec.usedBlocks, 0);
  } finally {
    await spec.cleanup();
  }
});

Deno.test("preempted and cancelled speculating sequences: the same tokens, every block freed", async () => {
  const prompts = [0, 1, 2, 3, 4, 5].map((i) => bytes(`${"ab ".repeat(4 + i)}a`));
  await checkPreempted(EAGER, prompts, [5]);
});

Deno.test("speculation: options checked at construction; runtime_data and Prometheus counters", async () => {
  const gpu = await testGpu();
  for (const bad of [{ method: "eagle" }, { method: "ngram", numSpeculativeTokens: 0 }]) {
    await rejects(
      async () =>
        await new WebGpuEngine({
          files: dirFiles(FORTUNE),
          name: "fortune",
          gpu,
          speculative: bad as SpeculativeOptions,
        }).start(0n),
      (e) => e instanceof EngineError && e.type === "InvalidArgument",
    );
  }
  const e = await fortuneEngine({ speculative: { method: "ngram" } });
  const config = await e.start(0n);
  try {
    deepStrictEqual(config.runtime_data?.speculative, {
      method: "ngram",
      num_speculative_tokens: 4,
      prompt_lookup_max: 4,
      prompt_lookup_min: 2,
    });
    const metrics = EngineMetrics.fromHierarchy({
      namespace: "ns",
      component: "c",
      endpoint: "e",
      workerId: 1n,
    });
    await e.setupMetrics({ model: "fortune", component: "c", model_load_time_seconds: 0, metrics });
    await collect(e, request(bytes("la la la la la la"), { stop_conditions: { max_tokens: 30 } }));
    const s = e.speculation;
    ok(s.numAcceptedTokens > 0);
    const text = metrics.render().body;
    const value = (name: string, labels = "") =>
      Number(
        text.match(
          new RegExp(`^dynamo_component_${name}_total\\{[^}]*${labels}[^}]*\\} (\\S+)$`, "m"),
        )
          ?.[1],
      );
    equal(value("spec_decode_num_drafts"), s.numDrafts);
    equal(value("spec_decode_num_draft_tokens"), s.numDraftTokens);
    equal(value("spec_decode_num_accepted_tokens"), s.numAcceptedTokens);
    equal(
      value("spec_decode_num_accepted_tokens_per_pos", 'position="0"'),
      s.numAcceptedTokensPerPos[0],
    );
    equal(
      value("spec_decode_num_accepted_tokens_per_pos", 'position="3"'),
      s.numAcceptedTokensPerPos[3],
    );
  } finally {
    await e.cleanup();
  }
});
