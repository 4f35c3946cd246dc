/**
 * `start()` compiles every compute pipeline a request can take: after it, requests of every
 * shape (a 1-token prompt, a prompt longer than one prefill chunk, a batch of concurrent
 * requests, greedy and sampled, with logprobs, penalties and masks) create no pipeline. Counted
 * by wrapping the device's `createComputePipeline(Async)`, so a pipeline made anywhere counts.
 * Each test runs on a device of its own: pipelines are cached per device.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { quantizeToFile } from "../../adapters/deno/quantize.ts";
import { acquireGpu, type Gpu } from "../../gpu/device.ts";
import type { PreprocessedRequest } from "../../contract/types.ts";
import type { ModelFiles } from "../../formats/source.ts";
import { WebGpuEngine } from "./engine.ts";
import { warmShapes } from "./warmup.ts";
import { bytes, collect, FORTUNE, request } from "../../../test/support/fortune_engine.ts";

/**
 * A device of its own whose pipeline creations are counted. `gpuShapes`: report the adapter as
 * not a CPU one, so the kernels take the shapes they take on a GPU (32 threads per row, the
 * tiled GEMM above 32 rows, split-K decode attention), run here on lavapipe all the same.
 */
async function countingGpu(gpuShapes = false): Promise<{ gpu: Gpu; created: () => string[] }> {
  const gpu = await acquireGpu({ label: "kiln-warmup-test" });
  const d = gpu.device;
  const created: string[] = [];
  const makeAsync = d.createComputePipelineAsync.bind(d);
  const make = d.createComputePipeline.bind(d);
  Object.assign(d, {
    createComputePipelineAsync: (desc: GPUComputePipelineDescriptor) => {
      created.push(desc.label ?? "?");
      return makeAsync(desc);
    },
    createComputePipeline: (desc: GPUComputePipelineDescriptor) => {
      created.push(desc.label ?? "?");
      return make(desc);
    },
  });
  if (gpuShapes) {
    const info = d.adapterInfo;
    Object.defineProperty(d, "adapterInfo", {
      value: {
        vendor: info.vendor,
        architecture: info.architecture,
        device: info.device,
        description: info.description,
        isFallbackAdapter: false,
      },
    });
  }
  return { gpu, created: () => [...created] };
}

/** Every sampler setting at once. */
const SAMPLED = {
  temperature: 0.9,
  top_k: 40,
  top_p: 0.9,
  min_p: 0.02,
  repetition_penalty: 1.1,
  frequency_penalty: 0.2,
  presence_penalty: 0.1,
};

/**
 * Requests of every shape class, run concurrently in a second round (steps mixing decode tokens
 * and prompt chunks, batches of 2 to `prompts.length` sequences); each must stream its tokens.
 * The prompt longer than `chunk` (maxNumBatchedTokens) is prefilled over several steps, the first
 * without logit rows.
 */
async function everyShape(e: WebGpuEngine, chunk: number, prompts: string[]): Promise<void> {
  const one = await collect(e, request([256], { stop_conditions: { max_tokens: 2 } }));
  equal(one.ids.length, 2);
  const long = bytes("A prompt longer than one chunk of prefill, in bytes, it is.").slice(
    0,
    chunk + 2,
  );
  ok(long.length > chunk);
  const chunked = await collect(
    e,
    request(long, { stop_conditions: { max_tokens: 2 }, output_options: { logprobs: 3 } }),
  );
  equal(chunked.ids.length, 2);
  const options: Partial<PreprocessedRequest>[] = [
    { sampling_options: { ...SAMPLED, seed: 1 } },
    { sampling_options: { temperature: 0.7, allowed_token_ids: [97, 98, 99] } },
    { output_options: { logprobs: 20 } },
    { sampling_options: { ...SAMPLED, seed: 2 }, output_options: { logprobs: 1 } },
    { sampling_options: { temperature: 1, bad_words_token_ids: [[32]] } },
  ];
  const results = await Promise.all(prompts.map((p, i) =>
    collect(
      e,
      request(bytes(p), { ...options[i % options.length], stop_conditions: { max_tokens: 2 + i } }),
    )
  ));
  results.forEach((r, i) => equal(r.ids.length, 2 + i, `request ${i}`));
}

/** Five prompts of 1 to 35 tokens. */
const PROMPTS = ["", "Lo", "You will", "The quick brown", "Love is all you need, they say, ok"];

async function checkWarm(
  files: ModelFiles,
  name: string,
  { gpuShapes = false, chunk = 40, prompts = PROMPTS } = {},
): Promise<void> {
  const { gpu, created } = await countingGpu(gpuShapes);
  const e = new WebGpuEngine({
    files,
    name,
    gpu,
    kvBlocks: 64,
    maxNumSeqs: 6,
    maxNumBatchedTokens: chunk,
  });
  try {
    await e.start(0n);
    const atStart = created().length;
    ok(atStart > 0, "start() compiled the pipelines");
    equal(e.warmUpReport?.pipelines, atStart);
    await everyShape(e, chunk, prompts);
    deepStrictEqual(created().slice(atStart), [], "pipelines created after start()");
  } finally {
    await e.cleanup();
    gpu.device.destroy();
  }
}

Deno.test("warm-up: after start(), no request creates a pipeline (CPU adapter shapes)", async () => {
  await checkWarm(dirFiles(FORTUNE), "fortune");
});

Deno.test("warm-up: after start(), no request creates a pipeline (GPU shapes: GEMM, split-K)", async () => {
  // These kernels are slow on lavapipe (barriers over 256 threads): fewer, shorter requests, a
  // 34-token chunk (the GEMM's class, above 32 rows).
  await checkWarm(dirFiles(FORTUNE), "fortune", {
    gpuShapes: true,
    chunk: 34,
    prompts: ["", "You will"],
  });
});

Deno.test("warm-up: a GGUF model too; its long prompt (a step without logit rows) generates", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/fortune-q8_0.gguf`;
    await quantizeToFile(FORTUNE, path, "q8_0");
    await checkWarm(dirFiles(path), "fortune-q8_0", { prompts: PROMPTS.slice(0, 3) });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("warm-up: compiled while the weights upload, its progress reported after theirs", async () => {
  const { gpu, created } = await countingGpu();
  const events: { phase: string; done: number; total: number; pipelines: number }[] = [];
  const e = new WebGpuEngine({
    files: dirFiles(FORTUNE),
    name: "fortune",
    gpu,
    onLoadProgress: (done, total, _item, phase) =>
      events.push({ phase, done, total, pipelines: created().length }),
  });
  try {
    await e.start(0n);
    const phases = events.map((x) => x.phase);
    const firstPipelines = phases.indexOf("pipelines");
    ok(firstPipelines > 0, "both phases reported");
    ok(phases.slice(firstPipelines).every((p) => p === "pipelines"), "weights, then pipelines");
    const last = events[firstPipelines - 1]!;
    equal(last.done, last.total, "the weights' last report is their total");
    // Compiling began before the last weight byte was reported: the two overlap.
    ok(last.pipelines > 0, `${last.pipelines} pipelines asked for by the weights' last report`);
    const end = events[events.length - 1]!;
    equal(end.done, end.total);
  } finally {
    await e.cleanup();
    gpu.device.destroy();
  }
});

Deno.test("without the warm-up the first request compiles (the count above can fail)", async () => {
  const { gpu, created } = await countingGpu();
  const e = new WebGpuEngine({ files: dirFiles(FORTUNE), name: "fortune", gpu, warmUp: false });
  try {
    await e.start(0n);
    equal(created().length, 0);
    equal(e.warmUpReport, undefined);
    await collect(e, request([256], { stop_conditions: { max_tokens: 2 } }));
    ok(created().length > 0, "the first request compiled its pipelines");
  } finally {
    await e.cleanup();
    gpu.device.destroy();
  }
});

Deno.test("warmShapes: every token and row class once, rows never above tokens", () => {
  const shapes = warmShapes(256, 16);
  const tokens = shapes.map((s) => s.tokens);
  for (const t of [1, 2, 3, 4, 5, 6, 7, 8, 33]) ok(tokens.includes(t), `tokens ${t}`);
  for (const s of shapes) ok(s.rows >= 1 && s.rows <= s.tokens && s.rows <= 16);
  const rows = new Set(shapes.map((s) => s.rows));
  for (const r of [1, 2, 3, 4, 5, 6, 7, 8]) ok(rows.has(r), `rows ${r}`);
  // A GPU's GEMM takes the LM head too when a step may sample more than 32 sequences.
  ok(warmShapes(256, 64).some((s) => s.rows === 33));
  // Small limits: nothing beyond them.
  for (const s of warmShapes(3, 2)) ok(s.tokens <= 3 && s.rows <= 2);
});
