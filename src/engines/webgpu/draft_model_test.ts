/**
 * Speculative decoding with a draft model in `WebGpuEngine`: the same tokens as without it,
 * greedy on every fixture model (drafted by llama.cpp's quantization of the same checkpoint, or
 * by the model itself) and sampled seed for seed; batches, preemption and cancellation while a
 * draft is being made; a draft model that cannot serve the target refused, typed.
 */
import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { EngineError } from "../../contract/errors.ts";
import type { PreprocessedRequest } from "../../contract/types.ts";
import type { SpeculativeOptions } from "../speculation.ts";
import { WebGpuEngine } from "./engine.ts";
import {
  bytes,
  collect,
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

const Q2K = new URL("../../../test/fixtures/llamacpp/fortune/Q2_K.gguf", import.meta.url).pathname;

const draftOf = (path: string, k = 4): SpeculativeOptions => ({
  method: "draft_model",
  model: dirFiles(path),
  numSpeculativeTokens: k,
});

Deno.test("greedy: the same tokens with and without a draft model on every fixture model", async () => {
  let accepted = 0;
  for (const f of await speculationFixtures()) {
    const req = request(f.prompt, { model: f.name, stop_conditions: { max_tokens: 40 } });
    const plain = await engineOn(f.path, f.name, {});
    const want = await collect(plain, req).finally(() => plain.cleanup());
    const spec = await engineOn(f.path, f.name, { speculative: draftOf(f.draft, 3) });
    try {
      const got = await collect(spec, req);
      deepStrictEqual(got.ids, want.ids, `${f.name}: the draft model changed the greedy tokens`);
      equal(got.last.finish_reason, want.last.finish_reason);
      ok(spec.speculation.numDrafts > 0, `${f.name}: no draft was verified`);
      if (f.draft === f.path) {
        // The model drafting for itself: its greedy drafts are its greedy tokens, bar near-ties
        // that a step of 4 rows and one of 1 row break differently.
        const s = spec.speculation;
        ok(s.numAcceptedTokens >= 0.8 * s.numDraftTokens, `${f.name}: ${JSON.stringify(s)}`);
      }
      accepted += spec.speculation.numAcceptedTokens;
      equal(spec.usedBlocks, 0);
    } finally {
      await spec.cleanup();
    }
  }
  ok(accepted > 100, `drafts were accepted (${accepted}), not only rejected`);
});

Deno.test("a draft model of a smaller vocabulary: no draft for a sequence holding a token past it", async () => {
  // qwen2-bias-tied (320 tokens) drafted by llama-gqa (260 tokens, another model altogether).
  const [qwen, gqa] = ["qwen2-bias-tied-f16", "llama-gqa-f32"].map((n) =>
    new URL(`../../../test/fixtures/models/${n}/`, import.meta.url).pathname
  );
  const low = Array.from({ length: 40 }, (_, i) => (i * 37) % 260);
  const reqs = [low, [...low, 300, 301]].map((p) =>
    request(p, { model: "qwen2", stop_conditions: { max_tokens: 24 } })
  );
  const plain = await engineOn(qwen!, "qwen2", {});
  const want = await Promise.all(reqs.map((r) => collect(plain, r))).finally(() => plain.cleanup());
  const spec = await engineOn(qwen!, "qwen2", { speculative: draftOf(gqa!) });
  try {
    const got = await collect(spec, reqs[0]!);
    deepStrictEqual(got.ids, want[0]!.ids);
    const drafts = spec.speculation.numDrafts;
    ok(drafts > 0 || got.ids.some((t) => t >= 260), "a draft unless the output left 0..259");
    deepStrictEqual((await collect(spec, reqs[1]!)).ids, want[1]!.ids);
    equal(spec.speculation.numDrafts, drafts, "no draft holding tokens 300 and 301");
  } finally {
    await spec.cleanup();
  }
});

const SEEDS = 256;
const sampled = (seed: number): PreprocessedRequest =>
  request(bytes("The fortune: "), {
    stop_conditions: { max_tokens: 8 },
    sampling_options: { temperature: 1, seed },
  });

async function sampleAll(e: WebGpuEngine): Promise<number[][]> {
  const out: number[][] = [];
  for (let at = 0; at < SEEDS; at += 32) {
    const seeds = Array.from({ length: 32 }, (_, i) => at + i);
    out.push(...await Promise.all(seeds.map(async (s) => (await collect(e, sampled(s))).ids)));
  }
  return out;
}

Deno.test("sampled, 32 streams at a time: seed for seed the same tokens with a Q2_K draft", async () => {
  const plain = await fortuneEngine({ maxNumSeqs: 32 });
  await plain.start(0n);
  const want = await sampleAll(plain).finally(() => plain.cleanup());
  const spec = await fortuneEngine({ maxNumSeqs: 32, speculative: draftOf(Q2K) });
  await spec.start(0n);
  const got = await sampleAll(spec).finally(() => spec.cleanup());
  const differ = got.filter((ids, i) => JSON.stringify(ids) !== JSON.stringify(want[i])).length;
  equal(differ, 0, `${differ} of ${SEEDS} seeds drew other tokens with a draft model`);
  const s = spec.speculation;
  ok(s.numAcceptedTokens > SEEDS, `sampled tokens came from drafts: ${JSON.stringify(s)}`);
  ok(s.numAcceptedTokens < s.numDraftTokens, "and some drafts were rejected");
});

Deno.test("a draft model: preempted, and cancelled while its draft is being made; blocks freed", async () => {
  // Stopped as its first draft is asked for (after the prompt's token), and mid-run.
  const prompts = [0, 1, 2, 3, 4, 5].map((i) => bytes(`The ${"old ".repeat(3 + i)}fortune`));
  await checkPreempted(draftOf(Q2K), prompts, [1, 3, 6]);
});

Deno.test("a draft model that cannot serve: typed errors, the target not started", async () => {
  const gpu = await testGpu();
  const start = async (o: Record<string, unknown>) =>
    await new WebGpuEngine({
      files: dirFiles(FORTUNE),
      name: "fortune",
      gpu,
      kvBlocks: 16,
      speculative: { method: "draft_model", ...o } as SpeculativeOptions,
    }).start(0n);
  const mqa = new URL("../../../test/fixtures/llamacpp/llama-mqa-bf16/Q8_0.gguf", import.meta.url);
  const cases: [Record<string, unknown>, string, RegExp][] = [
    [{}, "InvalidArgument", /speculative\.model/],
    [{ model: dirFiles(Q2K), numSpeculativeTokens: 0 }, "InvalidArgument", /numSpeculative/],
    [{ model: dirFiles(Q2K), kvBlocks: 0 }, "InvalidArgument", /kvBlocks/],
    // A vocabulary of 512 tokens against fortune's 260.
    [{ model: dirFiles(mqa.pathname) }, "InvalidArgument", /vocabulary \(512 tokens\)/],
    [
      { model: dirFiles("/nonexistent/model") },
      "InvalidArgument",
      /draft model: .*no config\.json/,
    ],
  ];
  for (const [o, type, why] of cases) {
    await rejects(
      start(o),
      (e) => e instanceof EngineError && e.type === type && why.test(e.message),
      JSON.stringify(Object.keys(o)),
    );
  }
  // What the started engine reports.
  const e = await fortuneEngine({ speculative: draftOf(Q2K) });
  const config = await e.start(0n);
  try {
    const spec = config.runtime_data?.speculative as Record<string, unknown>;
    equal(spec.method, "draft_model");
    equal(spec.num_speculative_tokens, 4);
    equal(spec.draft_model, "Q2_K");
    ok((spec.draft_kv_blocks as number) > 0);
    equal(e.vocabSize, 260);
  } finally {
    await e.cleanup();
  }
});

/** The hashes of the blocks `e` announced as stored while it ran `reqs` one after another. */
async function storedBlocks(e: WebGpuEngine, reqs: PreprocessedRequest[]): Promise<string[]> {
  const stored: string[] = [];
  const [source] = await e.kvEventSources();
  ok(source?.kind === "push");
  source.onReady({
    publish: (ev) => {
      if (ev.type === "BlockStored") stored.push(...ev.block_hashes.map(String));
    },
  });
  for (const r of reqs) await collect(e, r);
  return stored.sort();
}

Deno.test("a draft model: a block completed in the step a sequence finishes is cached and announced", async () => {
  // Repeated phrases, so that drafts are accepted, cut at every length from 20 to 44: some end
  // in a verified step that also completes a block.
  const reqs = Array.from(
    { length: 25 },
    (_, i) =>
      request(bytes(`${i} la la la la la la la`), { stop_conditions: { max_tokens: 20 + i } }),
  );
  const plain = await fortuneEngine();
  await plain.start(0n);
  const want = await storedBlocks(plain, reqs).finally(() => plain.cleanup());
  const spec = await fortuneEngine({ speculative: draftOf(Q2K) });
  await spec.start(0n);
  try {
    const got = await storedBlocks(spec, reqs);
    ok(spec.speculation.numAcceptedTokens > 0, "drafts were accepted");
    const missing = want.filter((b) => !got.includes(b));
    deepStrictEqual(missing, [], `${missing.length} of ${want.length} blocks never stored`);
    deepStrictEqual(got, want, "every block stored once, as without the draft");
    equal(spec.usedBlocks, 0);
  } finally {
    await spec.cleanup();
  }
});
