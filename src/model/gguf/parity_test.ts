/**
 * Quantized GGUF models on the GPU against float64 logits computed on their dequantized
 * weights: the shared fixtures and fortune, quantized by Kiln's own converter in memory, each
 * verified like a safetensors checkpoint (every prompt position and greedy step within the
 * f32 bound of `tolerance`, greedy tokens agreeing where the reference margin is wide).
 */
import { equal, ok } from "node:assert/strict";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { openCheckpoint } from "../checkpoint.ts";
import { GpuModel } from "../gpu_model.ts";
import { ReferenceModel } from "../reference_model.ts";
import { buildReference } from "../reference_file.ts";
import { fileListFiles } from "../source.ts";
import { parseReference, tolerance, verifyModel } from "../verify.ts";
import { readHfCheckpoint, writeHfAsGguf } from "./convert.ts";
import type { GgufMix } from "./quant_mix.ts";
import type { Checkpoint } from "../checkpoint.ts";
import type { ReferenceFile } from "../reference_file.ts";
import { PATH_KINDS } from "../../gpu/paths.ts";
import { testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import { MODELS } from "../../../test/support/models.ts";

/** `dir` converted to a GGUF `File` with `mix`, never touching the disk. */
async function quantizedFile(dir: string, mix: GgufMix, name: string): Promise<File> {
  const parts: Uint8Array[] = [];
  const ck = await readHfCheckpoint(dirFiles(dir));
  await writeHfAsGguf(ck, (b) => void parts.push(b.slice()), { name, mix });
  return new File(parts as BlobPart[], `${name}-${mix}.gguf`);
}

// The fixtures' hidden sizes (64, 96) take no K-quant (256-element blocks): their q4_k_m files
// fall back as llama.cpp's do (Q4_K to Q5_0, Q6_K to Q8_0), which runs Q5_0 end to end; their
// q6_k files would only repeat q8_0.
const CASES: [typeof MODELS[number], GgufMix[]][] = MODELS.map((m) => [
  m,
  m.name === "fortune" ? ["q8_0", "q4_0", "q6_k", "q4_k_m"] : ["q8_0", "q4_0", "q4_k_m"],
]);

/** A case's GGUF checkpoint and its float64 reference, built once for both kernel paths. */
interface Prepared {
  checkpoint: Checkpoint;
  reference: ReferenceFile;
}

async function prepare(m: typeof MODELS[number], mix: GgufMix): Promise<Prepared> {
  const files = fileListFiles([await quantizedFile(m.dir.pathname, mix, m.name)]);
  const checkpoint = await openCheckpoint(files);
  equal(checkpoint.format, "gguf");
  const source = parseReference(await Deno.readTextFile(`${m.dir.pathname}reference.json`));
  const prompts = source.prompts.slice(0, 2).map((p) => p.input_ids);
  const ref = await ReferenceModel.load(checkpoint.config, checkpoint.weights);
  return { checkpoint, reference: buildReference(ref, checkpoint.weights, m.name, prompts, 6) };
}

for (const [m, mixes] of CASES) {
  for (const mix of mixes) {
    let prepared: Promise<Prepared> | undefined;
    for (const paths of PATH_KINDS) {
      Deno.test(`${m.name} ${mix}: GGUF logits match float64 on the dequantized weights (${paths} paths)`, async () => {
        const gpu = await testGpu(paths);
        const { checkpoint, reference } = await (prepared ??= prepare(m, mix));
        await withErrorScopes(gpu.device, async () => {
          const model = await GpuModel.fromCheckpoint(gpu, checkpoint, { kvDtype: "f32" });
          try {
            ok(model.layers.every((l) => l.gateUp.parts.every((p) => p.dtype !== "f32")));
            const { results, dtype } = await verifyModel(model, reference);
            const tol = tolerance(model.kvDtype);
            for (const r of results) {
              console.log(
                `  ${m.name} ${mix} (${dtype}, ${paths} paths) prompt ${r.prompt}: max|err| ${
                  r.max_abs_err.toExponential(2)
                } rel_l2 ${r.rel_l2.toExponential(2)} greedy ${r.greedy_agree}/${r.greedy_checked}`,
              );
              ok(
                r.passed,
                `prompt ${r.prompt}: ${JSON.stringify(r)} (bounds ${JSON.stringify(tol)})`,
              );
              ok(r.greedy_checked > 0, "some greedy steps were checked");
            }
          } finally {
            model.destroy();
          }
        });
      });
    }
  }
}
