/**
 * GGUF files holding Kiln's 2- and 3-bit and ternary block types (Q2_K, Q3_K, TQ1_0, TQ2_0) on
 * the GPU against float64 logits computed on their dequantized weights, as `parity_test.ts` does
 * for the mixes: every prompt position and greedy step within the f32 bound of `tolerance`.
 * Each file is fortune converted with the types given per tensor role below (no llama.cpp mix
 * makes exactly these; fortune's rows are whole 256-element super-blocks, so none falls back).
 * Prompts of 1 to 36 tokens: the prefill runs the quantized product in several 8-row slices,
 * decode in one; the embedding gather reads the low-bit table too.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../adapters/deno/file_source.ts";
import type { QuantType } from "../gpu/formats/registry.ts";
import { openCheckpoint } from "../model/checkpoint.ts";
import { GpuModel } from "../runtime/gpu_model.ts";
import { ReferenceModel } from "./model.ts";
import { buildReference } from "./file.ts";
import { fileListFiles } from "../formats/source.ts";
import { parseReference, tolerance, verifyModel } from "./verify.ts";
import { ggufMetadata, ggufTensors, planTensors, readHfCheckpoint } from "../convert/convert.ts";
import { fitRow, type TensorRole } from "../convert/quant_mix.ts";
import { writeGguf } from "../convert/writer.ts";
import { testGpu, withErrorScopes } from "../../test/support/gpu.ts";
import { MODELS } from "../../test/support/models.ts";

type Plan = Partial<Record<TensorRole, QuantType>>;

const PLANS: Record<string, Plan> = {
  // Q3_K_M-like: 3 bits where llama.cpp keeps more, 2 bits elsewhere.
  "q2_k+q3_k": {
    embed: "Q3_K",
    attn_q: "Q2_K",
    attn_k: "Q2_K",
    attn_v: "Q3_K",
    attn_output: "Q3_K",
    ffn_gate: "Q2_K",
    ffn_up: "Q2_K",
    ffn_down: "Q3_K",
    output: "Q3_K",
  },
  ternary: {
    embed: "TQ1_0",
    attn_q: "TQ2_0",
    attn_k: "TQ1_0",
    attn_v: "TQ2_0",
    attn_output: "TQ1_0",
    ffn_gate: "TQ1_0",
    ffn_up: "TQ2_0",
    ffn_down: "TQ1_0",
    output: "TQ2_0",
  },
};

/** Fortune converted to a GGUF `File` with each matrix in its role's type, never on disk. */
async function plannedFile(plan: Plan, name: string): Promise<{ file: File; types: string[] }> {
  const ck = await readHfCheckpoint(dirFiles(FORTUNE.dir.pathname));
  const tensors = planTensors(ck).map((t) => {
    const want = plan[t.role];
    return want === undefined ? t : { ...t, type: fitRow(want, t.shape[t.shape.length - 1]!) };
  });
  const parts: Uint8Array[] = [];
  const meta = ggufMetadata(ck, { name });
  await writeGguf((b) => void parts.push(b.slice()), meta, ggufTensors(ck, tensors));
  const types = [...new Set(tensors.map((t) => t.type))].sort();
  return { file: new File(parts as BlobPart[], `${name}.gguf`), types };
}

const FORTUNE = MODELS.find((m) => m.name === "fortune")!;

Deno.test("fitRow: 2-bit, 3-bit and ternary rows that are not whole super-blocks take Q4_0, as llama.cpp's do", () => {
  for (const t of ["Q2_K", "Q3_K", "TQ1_0", "TQ2_0"] as const) {
    deepStrictEqual([fitRow(t, 512), fitRow(t, 896), fitRow(t, 48)], [t, "Q4_0", "F16"]);
  }
});

for (
  const [planName, want] of [
    ["q2_k+q3_k", ["F32", "Q2_K", "Q3_K"]],
    ["ternary", ["F32", "TQ1_0", "TQ2_0"]],
  ] as const
) {
  Deno.test(`fortune ${planName}: GGUF logits match float64 on the dequantized weights`, async () => {
    const gpu = await testGpu();
    const { file, types } = await plannedFile(PLANS[planName]!, `fortune-${planName}`);
    deepStrictEqual(types, want);
    const checkpoint = await openCheckpoint(fileListFiles([file]));
    equal(checkpoint.format, "gguf");
    const text = await Deno.readTextFile(`${FORTUNE.dir.pathname}reference.json`);
    const prompts = parseReference(text).prompts.map((p) => p.input_ids);
    const ref = await ReferenceModel.load(checkpoint.config, checkpoint.weights);
    const reference = buildReference(ref, checkpoint.weights, "fortune", prompts, 6);
    await withErrorScopes(gpu.device, async () => {
      const model = await GpuModel.fromCheckpoint(gpu, checkpoint, { kvDtype: "f32" });
      try {
        const { results } = await verifyModel(model, reference);
        const tol = tolerance(model.kvDtype);
        for (const r of results) {
          console.log(
            `  fortune ${planName} prompt ${r.prompt} (${prompts[r.prompt]!.length} tokens): ` +
              `max|err| ${r.max_abs_err.toExponential(2)} rel_l2 ${r.rel_l2.toExponential(2)} ` +
              `greedy ${r.greedy_agree}/${r.greedy_checked}`,
          );
          ok(r.passed, `prompt ${r.prompt}: ${JSON.stringify(r)} (bounds ${JSON.stringify(tol)})`);
        }
        equal(results.length, prompts.length);
      } finally {
        model.destroy();
      }
    });
  });
}
