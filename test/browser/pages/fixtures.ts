/**
 * In Chromium (SwiftShader WebGPU: subgroups, no f16; no Kiln kernel uses subgroups): the linear
 * kernels, compiled by Chromium's own shader compiler, against their reference, every
 * reference model loaded over HTTP with Range requests, its logits compared with HF's within
 * `verify`'s bounds with an f32 and with an f16 KV cache (SwiftShader's f32 arithmetic is not
 * lavapipe's; the summaries print each prompt's errors), and the sampler against the shared
 * cases; fortune quantized to GGUF Q4_K_M in the page, and every file llama.cpp quantized for the
 * test models (test/fixtures/llamacpp/), each loaded from a `File` as the demo's file picker gives
 * it and checked against float64 logits on its dequantized weights.
 *
 * All of that on the kernel paths SwiftShader takes by default (`cpu`: it is a fallback adapter),
 * then, on a second device acquired with `paths: "gpu"`, the kernels a GPU takes (see
 * `src/gpu/paths.ts`): a check that its steps dispatch them (the tiled GEMM above 32 rows, 64
 * threads per row, split-K decode attention, 32 threads per quantized row), the three small HF
 * fixtures against HF's logits (f32 KV cache; f16 for one), and one small GGUF against float64.
 * Fortune stays on the default paths: SwiftShader runs the GPU's kernels slowly (a barrier
 * switches through every thread), and these checks already add about 1.5 minutes.
 */
import { acquireGpu, type Gpu } from "../../../src/gpu/device.ts";
import { GpuModel } from "../../../src/runtime/gpu_model.ts";
import { fileListFiles } from "../../../src/formats/source.ts";
import { urlFiles } from "../../../src/formats/url_source.ts";
import { type Checkpoint, openCheckpoint } from "../../../src/model/checkpoint.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../../../src/convert/convert.ts";
import { buildReference } from "../../../src/reference/file.ts";
import { ReferenceModel } from "../../../src/reference/model.ts";
import { parseReference, type PromptResult, verifyModel } from "../../../src/reference/verify.ts";
import type { KvDtype } from "../../../src/gpu/kernels/attention.ts";
import { Sampler } from "../../../src/gpu/kernels/sampling.ts";
import { uploadBuffer } from "../../../src/gpu/buffers.ts";
import type { SamplingParams } from "../../../src/reference/kernels/sampling.ts";
import { runChecks } from "./report.ts";
import { linearCheck } from "./linear.ts";
import { productLabels, stepPipelines } from "../../support/step_pipelines.ts";
import type { GgufMix } from "../../../src/convert/quant_mix.ts";

const MODELS = [
  "test/fixtures/models/llama-gqa-f32",
  "test/fixtures/models/qwen2-bias-tied-f16",
  "test/fixtures/models/llama-mqa-bf16",
  "models/fortune",
];

const gpu = await acquireGpu({ label: "kiln-browser-test" });
/** The files llama.cpp quantized (tools/fixtures/llama_quantize.ts): model and file type. */
const LLAMACPP_FILES = ((await (await fetch("/test/fixtures/llamacpp/manifest.json")).json()) as {
  files: { model: string; ftype: string }[];
}).files;
const gpuPaths = await acquireGpu({ label: "kiln-browser-test:gpu-paths", paths: "gpu" });
const HF_FIXTURES = MODELS.filter((dir) => dir.startsWith("test/fixtures/"));
const KV_DTYPES: KvDtype[] = ["f32", "f16"];

/** `max |err| / max |ref| / rel L2 / greedy agreed/checked` of each prompt. */
const summarize = (results: PromptResult[]) =>
  results.map((r) =>
    `p${r.prompt}: ${r.max_abs_err.toExponential(1)} / ${r.max_abs_ref.toFixed(1)} / ${
      r.rel_l2.toExponential(1)
    } / ${r.greedy_agree}/${r.greedy_checked}`
  ).join("; ");

/** `(cpu paths)` or `(gpu paths)`: which kernels `g` takes. */
const onPaths = (g: Gpu) => `(${g.caps.paths} paths)`;

/** A model against HF's logits within `verify`'s bounds for its KV cache dtype. */
const modelCheck = (dir: string, kvDtype: KvDtype, g: Gpu = gpu) =>
  [`logits match HF: ${dir} (KV ${kvDtype}) ${onPaths(g)}`, async () => {
    const base = new URL(`/${dir}/`, location.href).href;
    const reference = parseReference(await (await fetch(`${base}reference.json`)).text());
    const model = await GpuModel.load(g, urlFiles(base), { kvDtype });
    try {
      const { passed, results } = await verifyModel(model, reference);
      const summary = `KV ${model.kvDtype}: ${summarize(results)}`;
      if (!passed) throw new Error(summary);
      return summary;
    } finally {
      model.destroy();
    }
  }] as const;

/** `dir` quantized to GGUF with `mix` in the page, as a `File`'s checkpoint. */
async function ggufCheckpoint(dir: string, mix: GgufMix) {
  const parts: Uint8Array[] = [];
  const source = await readHfCheckpoint(urlFiles(new URL(`/${dir}/`, location.href).href));
  await writeHfAsGguf(source, (b) => void parts.push(b.slice()), { mix });
  const file = new File(parts as BlobPart[], `${dir.split("/").pop()}-${mix}.gguf`);
  return await openCheckpoint(fileListFiles([file]));
}

/**
 * A GGUF checkpoint against float64 on its dequantized weights: `steps` greedy steps after each of
 * `prompts` (default: the first two of the reference file of `dir`, the model it was made from).
 */
const ggufVerify = (
  name: string,
  open: () => Promise<Checkpoint>,
  dir: string,
  g: Gpu,
  steps: number,
  prompts?: number[][],
) =>
  [
    `${name}: logits match float64 on the dequantized weights ${onPaths(g)}`,
    async () => {
      const checkpoint = await open();
      const ids = prompts ?? parseReference(
        await (await fetch(`/${dir}/reference.json`)).text(),
      ).prompts.slice(0, 2).map((p) => p.input_ids);
      const ref = await ReferenceModel.load(checkpoint.config, checkpoint.weights);
      const reference = buildReference(ref, checkpoint.weights, dir, ids, steps);
      const model = await GpuModel.fromCheckpoint(g, checkpoint, { kvDtype: "f32" });
      try {
        const { passed, results } = await verifyModel(model, reference);
        const summary = `${model.dtype}, KV ${model.kvDtype}: ${summarize(results)}`;
        if (!passed) throw new Error(summary);
        return summary;
      } finally {
        model.destroy();
      }
    },
  ] as const;

/** `dir` quantized to GGUF with `mix` in the page, from a File. */
const ggufCheck = (dir: string, mix: GgufMix, g: Gpu, steps: number, prompts?: number[][]) =>
  ggufVerify(
    `${dir} as GGUF ${mix.toUpperCase()} from a File`,
    () => ggufCheckpoint(dir, mix),
    dir,
    g,
    steps,
    prompts,
  );

/**
 * A file llama.cpp quantized (test/fixtures/llamacpp/, tools/fixtures/llama_quantize.ts), fetched
 * and opened as a `File`, as the demo's file picker gives it.
 */
const llamaCppCheck = (dir: string, ftype: string, steps: number, prompts?: number[][]) => {
  const model = dir.split("/").pop()!;
  return ggufVerify(
    `llama.cpp's ${model} ${ftype}`,
    async () => {
      const url = `/test/fixtures/llamacpp/${model}/${ftype}.gguf`;
      const bytes = await (await fetch(url)).arrayBuffer();
      return await openCheckpoint(fileListFiles([new File([bytes], `${model}-${ftype}.gguf`)]));
    },
    dir,
    gpu,
    steps,
    prompts,
  );
};

/**
 * The pipelines `g`'s steps dispatch on the llama-gqa fixture (context 512: two key splits), F32
 * and as GGUF Q8_0 (both through the same product kernels): on `gpu` paths the staged GEMM for a
 * 33-token prefill, 32 threads per row for a decode step and split-K decode attention; on `cpu`
 * paths the register-tiled GEMM, one thread per row and one attention pass.
 */
const pathsCheck = (g: Gpu) =>
  [`steps dispatch the kernels of their paths ${onPaths(g)}`, async () => {
    const dir = "test/fixtures/models/llama-gqa-f32";
    // Float and quantized weights take the same product kernels (float ones as formats).
    const want = g.caps.paths === "gpu"
      ? {
        prefill: "product/gemm:main",
        tpr: 32,
        attention: "split",
        quantTpr: 32,
        quantPrefill: "product/gemm:main",
      }
      : {
        prefill: "product/gemm:rows",
        tpr: 1,
        attention: "single",
        quantTpr: 1,
        quantPrefill: "product/gemm:rows",
      };
    const got: Record<string, unknown> = {};
    const float = await GpuModel.load(g, urlFiles(new URL(`/${dir}/`, location.href).href));
    try {
      const layers = productLabels(float.config.numLayers);
      const prefill = await stepPipelines(float, 33);
      const decode = await stepPipelines(float, 1);
      got.prefill = [
        ...new Set(layers.map((l) => `${prefill.get(l)?.shader}:${prefill.get(l)?.entry}`)),
      ].join();
      got.tpr = [...new Set(layers.map((l) => decode.get(l)?.constants.TPR))].join();
      got.attention = [...decode.values()].find((p) => p.shader === "attention")?.entry;
    } finally {
      float.destroy();
    }
    const quant = await GpuModel.fromCheckpoint(g, await ggufCheckpoint(dir, "q8_0"));
    try {
      const layers = productLabels(quant.config.numLayers);
      const decode = await stepPipelines(quant, 1);
      got.quantTpr = [...new Set(layers.map((l) => decode.get(l)?.constants.TPR))].join();
      const prefill = await stepPipelines(quant, 33);
      got.quantPrefill = [
        ...new Set(layers.map((l) => `${prefill.get(l)?.shader}:${prefill.get(l)?.entry}`)),
      ].join();
    } finally {
      quant.destroy();
    }
    const expected = Object.fromEntries(Object.entries(want).map(([k, v]) => [k, String(v)]));
    if (JSON.stringify(got) !== JSON.stringify(expected)) {
      throw new Error(`dispatched ${JSON.stringify(got)}, expected ${JSON.stringify(expected)}`);
    }
    return JSON.stringify(got);
  }] as const;

const samplerCheck = [
  "sampler distributions match the shared HF cases",
  async () => {
    const fixture = await (await fetch("/test/fixtures/sampling/cases.json")).json() as {
      vocab_size: number;
      cases: {
        options: SamplingParams;
        logits: number[];
        previous_tokens: number[];
        probs: number[];
      }[];
    };
    const V = fixture.vocab_size;
    const cases = fixture.cases.filter((c) => c.options.top_k !== 1);
    const sampler = new Sampler(gpu.device, cases.length, V);
    const logits = uploadBuffer(
      gpu.device,
      "cases:logits",
      Float32Array.from(cases.flatMap((c) => c.logits)),
    );
    const history = (c: typeof cases[number]) => ({
      tokens: c.previous_tokens,
      outputStart: c.previous_tokens.length,
    });
    const { probs } = await sampler.sample(
      logits,
      cases.map((c) => ({ ...c.options, history: history(c), u: 0.5 })),
      true,
    );
    let worst = 0;
    cases.forEach((c, i) =>
      c.probs.forEach((p, t) => (worst = Math.max(worst, Math.abs(probs![i * V + t]! - p))))
    );
    sampler.destroy();
    // As in sampling_test.ts: 1.5e-6, 7x the worst error measured (2.1e-7 here; it was 1e-5).
    if (worst > 1.5e-6) throw new Error(`max |p - p_ref| ${worst}`);
    return `max |p - p_ref| ${worst.toExponential(1)} over ${cases.length} cases`;
  },
] as const;

await runChecks([
  [
    "adapter",
    () =>
      Promise.resolve(`${gpu.caps.adapter} f16=${gpu.caps.f16} subgroups=${gpu.caps.subgroups}`),
  ],
  linearCheck(gpu.device),
  ...MODELS.flatMap((dir) => KV_DTYPES.map((kv) => modelCheck(dir, kv))),
  ggufCheck("models/fortune", "q4_k_m", gpu, 4, [[256, 89, 111, 117]]),
  // Every file llama.cpp quantized for the test models (test/fixtures/llamacpp/manifest.json).
  ...LLAMACPP_FILES.map((f) =>
    f.model === "fortune"
      ? llamaCppCheck("models/fortune", f.ftype, 4, [[256, 89, 111, 117]])
      : llamaCppCheck(`test/fixtures/models/${f.model}`, f.ftype, 4)
  ),
  samplerCheck,
  pathsCheck(gpuPaths),
  // f32 KV for each (f16 adds little here: Deno runs both on both paths), f16 for the cheapest.
  ...HF_FIXTURES.map((dir) => modelCheck(dir, "f32", gpuPaths)),
  modelCheck("test/fixtures/models/llama-mqa-bf16", "f16", gpuPaths),
  ggufCheck("test/fixtures/models/qwen2-bias-tied-f16", "q8_0", gpuPaths, 6),
]);
