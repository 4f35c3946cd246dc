/**
 * A GGUF checkpoint on the GPU against float64 logits computed on its dequantized weights: the
 * check `src/reference/gguf_parity_test.ts` (files from Kiln's own quantizer) and
 * `llamacpp_files_test.ts` (llama.cpp's) both run. Every prompt position and greedy step must
 * stay within the f32 bound of `tolerance`, greedy tokens agreeing where the reference margin is
 * wide.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import type { Gpu } from "../../src/gpu/device.ts";
import type { Checkpoint } from "../../src/model/checkpoint.ts";
import { GpuModel } from "../../src/runtime/gpu_model.ts";
import { ReferenceModel } from "../../src/reference/model.ts";
import { buildReference, type ReferenceFile } from "../../src/reference/file.ts";
import { parseReference, tolerance, verifyModel } from "../../src/reference/verify.ts";
import { withErrorScopes } from "./gpu.ts";

/** A GGUF checkpoint and its float64 reference. */
export interface ParityCase {
  checkpoint: Checkpoint;
  reference: ReferenceFile;
}

/**
 * The float64 reference of `checkpoint` (a GGUF one) for the first `prompts` prompts of the
 * reference file at `referenceJson` (only their token ids are used), `steps` greedy steps each.
 */
export async function parityCase(
  checkpoint: Checkpoint,
  referenceJson: string | URL,
  name: string,
  prompts: number,
  steps: number,
): Promise<ParityCase> {
  equal(checkpoint.format, "gguf");
  const source = parseReference(await Deno.readTextFile(referenceJson));
  const ids = source.prompts.slice(0, prompts).map((p) => p.input_ids);
  const ref = await ReferenceModel.load(checkpoint.config, checkpoint.weights);
  return { checkpoint, reference: buildReference(ref, checkpoint.weights, name, ids, steps) };
}

/** Load the case on `gpu` (KV cache f32), verify every prompt, print and assert each result. */
export async function checkParity(gpu: Gpu, c: ParityCase, label: string): Promise<void> {
  await withErrorScopes(gpu.device, async () => {
    const model = await GpuModel.fromCheckpoint(gpu, c.checkpoint, { kvDtype: "f32" });
    try {
      ok(model.layers.every((l) => l.gateUp!.parts.every((p) => p.dtype !== "f32")));
      const { results, dtype } = await verifyModel(model, c.reference);
      const tol = tolerance(model.kvDtype);
      for (const r of results) {
        console.log(
          `  ${label} (${dtype}, ${gpu.caps.paths} paths) prompt ${r.prompt}: max|err| ${
            r.max_abs_err.toExponential(2)
          } rel_l2 ${r.rel_l2.toExponential(2)} greedy ${r.greedy_agree}/${r.greedy_checked}`,
        );
        ok(r.passed, `prompt ${r.prompt}: ${JSON.stringify(r)} (bounds ${JSON.stringify(tol)})`);
        ok(r.greedy_checked > 0, "some greedy steps were checked");
      }
    } finally {
      model.destroy();
    }
  });
}
