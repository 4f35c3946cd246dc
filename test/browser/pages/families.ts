/**
 * In Chromium (SwiftShader WebGPU), every model family of the family fixtures
 * (`test/fixtures/families/index.json`; tiny random-weight checkpoints with every structural
 * feature on, README there): its F32 GGUF, opened from a `File` as the demo's file picker gives
 * it, against llama.cpp's teacher-forced logits within `verify`'s bounds (widened by the
 * fixture's own float64 check of llama.cpp); and its HF folder, fetched with Range requests and
 * quantized to GGUF Q4_K_M in the page (rows too narrow for K-quants fall back as llama.cpp's
 * mix does), against float64 on its dequantized weights.
 */
import { acquireGpu } from "../../../src/gpu/device.ts";
import { GpuModel } from "../../../src/runtime/gpu_model.ts";
import { fileListFiles } from "../../../src/formats/source.ts";
import { urlFiles } from "../../../src/formats/url_source.ts";
import { openCheckpoint } from "../../../src/model/checkpoint.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../../../src/convert/convert.ts";
import { buildReference } from "../../../src/reference/file.ts";
import { ReferenceModel } from "../../../src/reference/model.ts";
import { type PromptResult, type Reference, verifyModel } from "../../../src/reference/verify.ts";
import { FAMILIES, pageFixture } from "./family_files.ts";
import { runChecks } from "./report.ts";

const gpu = await acquireGpu({ label: "kiln-browser-families" });

const summarize = (r: PromptResult[]) =>
  r.map((p) =>
    `max |err| ${p.max_abs_err.toExponential(1)} (bound ${p.max_abs_bound.toExponential(1)}, ` +
    `|logit| ${p.max_abs_ref.toFixed(1)}), rel L2 ${p.rel_l2.toExponential(1)}, argmax ` +
    `${p.argmax_agree}/${p.argmax_checked}`
  ).join("; ");

/**
 * A checkpoint on the page's device (f32 KV cache) against `reference`, or without one against
 * float64 on its own (dequantized) weights: the first 16 fixture tokens and 4 greedy steps.
 */
async function verify(
  open: () => ReturnType<typeof openCheckpoint>,
  tokens: number[],
  reference?: Reference,
) {
  const checkpoint = await open();
  const ref = reference ?? buildReference(
    await ReferenceModel.load(checkpoint.config, checkpoint.weights),
    checkpoint.weights,
    "float64",
    [tokens.slice(0, 16)],
    4,
  );
  const model = await GpuModel.fromCheckpoint(gpu, checkpoint, { kvDtype: "f32" });
  try {
    const { passed, results } = await verifyModel(model, ref);
    const summary = `${model.dtype}: ${summarize(results)}`;
    if (!passed) throw new Error(summary);
    return summary;
  } finally {
    model.destroy();
  }
}

const checks = FAMILIES.flatMap((family) => {
  const fixture = pageFixture(family);
  return [
    [`${family}: F32 GGUF from a File matches llama.cpp's logits`, async () => {
      const { tokens, reference, gguf } = await fixture;
      const file = await gguf();
      return await verify(() => openCheckpoint(fileListFiles([file])), tokens, reference);
    }],
    [`${family}: HF folder as GGUF Q4_K_M matches float64 on its dequantized weights`, async () => {
      const parts: Uint8Array[] = [];
      const { dir, tokens } = await fixture;
      const source = await readHfCheckpoint(urlFiles(new URL(`${dir}hf/`, location.href).href));
      await writeHfAsGguf(source, (b) => void parts.push(b.slice()), { mix: "q4_k_m" });
      const file = new File(parts as BlobPart[], `${family}-q4_k_m.gguf`);
      return await verify(() => openCheckpoint(fileListFiles([file])), tokens);
    }],
  ] as const;
});

await runChecks([
  ["adapter", () => Promise.resolve(`${gpu.caps.adapter}; ${FAMILIES.length} families`)],
  ...checks,
]);
