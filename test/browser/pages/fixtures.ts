/**
 * In Chromium (SwiftShader WebGPU: subgroups, no f16; no Kiln kernel uses subgroups): the linear
 * kernels, compiled by Chromium's own shader compiler, against their reference, every
 * reference model loaded over HTTP with Range requests, its logits compared with HF's within
 * `verify`'s bounds with an f32 and with an f16 KV cache (SwiftShader's f32 arithmetic is not
 * lavapipe's; the summaries print each prompt's errors), and the sampler against the shared
 * cases; and fortune quantized to GGUF Q4_K_M in the page, loaded from a `File` and checked
 * against float64 logits on its dequantized weights.
 */
import { acquireGpu } from "../../../src/gpu/device.ts";
import { GpuModel } from "../../../src/model/gpu_model.ts";
import { fileListFiles } from "../../../src/model/source.ts";
import { urlFiles } from "../../../src/model/url_source.ts";
import { openCheckpoint } from "../../../src/model/checkpoint.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../../../src/model/gguf/convert.ts";
import { buildReference } from "../../../src/model/reference_file.ts";
import { ReferenceModel } from "../../../src/model/reference_model.ts";
import { parseReference, type PromptResult, verifyModel } from "../../../src/model/verify.ts";
import type { KvDtype } from "../../../src/gpu/kernels/attention.ts";
import { Sampler } from "../../../src/gpu/kernels/sampling.ts";
import { uploadBuffer } from "../../../src/gpu/buffers.ts";
import type { SamplingParams } from "../../../src/gpu/reference/sampling.ts";
import { runChecks } from "./report.ts";
import { linearCheck } from "./linear.ts";

const MODELS = [
  "test/fixtures/models/llama-gqa-f32",
  "test/fixtures/models/qwen2-bias-tied-f16",
  "test/fixtures/models/llama-mqa-bf16",
  "models/fortune",
];

const gpu = await acquireGpu({ label: "kiln-browser-test" });

/** `max |err| / max |ref| / rel L2 / greedy agreed/checked` of each prompt. */
const summarize = (results: PromptResult[]) =>
  results.map((r) =>
    `p${r.prompt}: ${r.max_abs_err.toExponential(1)} / ${r.max_abs_ref.toFixed(1)} / ${
      r.rel_l2.toExponential(1)
    } / ${r.greedy_agree}/${r.greedy_checked}`
  ).join("; ");

/** A model against HF's logits within `verify`'s bounds for its KV cache dtype. */
const modelCheck = (dir: string, kvDtype: KvDtype) =>
  [`logits match HF: ${dir} (KV ${kvDtype})`, async () => {
    const base = new URL(`/${dir}/`, location.href).href;
    const reference = parseReference(await (await fetch(`${base}reference.json`)).text());
    const model = await GpuModel.load(gpu, urlFiles(base), { kvDtype });
    try {
      const { passed, results } = await verifyModel(model, reference);
      const summary = `KV ${model.kvDtype}: ${summarize(results)}`;
      if (!passed) throw new Error(summary);
      return summary;
    } finally {
      model.destroy();
    }
  }] as const;

const ggufCheck = [
  "fortune as GGUF Q4_K_M from a File: logits match float64 on the dequantized weights",
  async () => {
    const parts: Uint8Array[] = [];
    const source = await readHfCheckpoint(
      urlFiles(new URL("/models/fortune/", location.href).href),
    );
    await writeHfAsGguf(source, (b) => void parts.push(b.slice()), { mix: "q4_k_m" });
    const file = new File(parts as BlobPart[], "fortune-q4_k_m.gguf");
    const checkpoint = await openCheckpoint(fileListFiles([file]));
    const ref = await ReferenceModel.load(checkpoint.config, checkpoint.weights);
    const reference = buildReference(ref, checkpoint.weights, "fortune", [[256, 89, 111, 117]], 4);
    const model = await GpuModel.fromCheckpoint(gpu, checkpoint, { kvDtype: "f32" });
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
  ...MODELS.flatMap((dir) => [modelCheck(dir, "f32"), modelCheck(dir, "f16")]),
  ggufCheck,
  samplerCheck,
]);
