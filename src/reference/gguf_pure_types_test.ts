/**
 * GGUF files holding one block type in every matrix (as `llama-quantize --pure` writes them),
 * for the types none of the converter's mixes writes: Q5_1, IQ4_NL and MXFP4 on a fixture (32-
 * element blocks), IQ4_XS on fortune (its rows must be whole 256-element super-blocks). Each file
 * is written in memory by the converter's own planner with the type forced, loaded as a user's
 * file would be, and verified against float64 logits on its dequantized weights at every prompt
 * position, prompts of up to 33 and 36 tokens included (prefill in several 8-row slices), and
 * each greedy step.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { openCheckpoint } from "../model/checkpoint.ts";
import { GpuModel } from "../runtime/gpu_model.ts";
import { ReferenceModel } from "./model.ts";
import { buildReference } from "./file.ts";
import { fileListFiles } from "../formats/source.ts";
import { parseReference, tolerance, verifyModel } from "./verify.ts";
import { ggufMetadata, ggufTensors, planTensors, readHfCheckpoint } from "../convert/convert.ts";
import { writeGguf } from "../convert/writer.ts";
import type { QuantType } from "../gpu/formats/registry.ts";
import { testGpu, withErrorScopes } from "../../test/support/gpu.ts";
import { MODELS } from "../../test/support/models.ts";

/** `dir` as a GGUF `File` whose 2-D weights are all `type` (vectors F32), never on disk. */
async function pureFile(dir: string, type: QuantType, name: string): Promise<File> {
  const ck = await readHfCheckpoint(dirFiles(dir));
  const plan = planTensors(ck).map((p) => p.role === "vector" ? p : { ...p, type });
  const parts: Uint8Array[] = [];
  await writeGguf(
    (b) => void parts.push(b.slice()),
    ggufMetadata(ck, { name }),
    ggufTensors(ck, plan),
  );
  return new File(parts as BlobPart[], `${name}-${type}.gguf`);
}

const CASES: [string, QuantType][] = [
  ["llama-gqa-f32", "Q5_1"],
  ["llama-gqa-f32", "IQ4_NL"],
  ["llama-gqa-f32", "MXFP4"],
  ["fortune", "IQ4_XS"],
];

for (const [name, type] of CASES) {
  Deno.test(`${name} with every matrix ${type}: GGUF logits match float64 on the dequantized weights`, async () => {
    const m = MODELS.find((m) => m.name === name)!;
    const gpu = await testGpu();
    const checkpoint = await openCheckpoint(
      fileListFiles([await pureFile(m.dir.pathname, type, name)]),
    );
    equal(checkpoint.format, "gguf");
    const w = checkpoint.weights;
    for (const t of [w.embed, w.layers[0]!.q!, w.layers[0]!.down!]) equal(t.dtype, type, t.name);
    const source = parseReference(await Deno.readTextFile(`${m.dir.pathname}reference.json`));
    const prompts = source.prompts.slice(0, 4).map((p) => p.input_ids);
    ok(prompts.some((p) => p.length > 32), "a prompt of several 8-row prefill slices");
    const ref = await ReferenceModel.load(checkpoint.config, w);
    const reference = buildReference(ref, w, name, prompts, 6);
    await withErrorScopes(gpu.device, async () => {
      const model = await GpuModel.fromCheckpoint(gpu, checkpoint, { kvDtype: "f32" });
      try {
        // The GPU holds the blocks as the file stores them (no dequantized copy).
        ok(model.layers.every((l) => l.gateUp!.parts.every((p) => p.dtype === type)));
        const { results } = await verifyModel(model, reference);
        const tol = tolerance(model.kvDtype);
        for (const r of results) {
          console.log(
            `  ${name} ${type} prompt ${r.prompt}: max|err| ${r.max_abs_err.toExponential(2)} ` +
              `rel_l2 ${r.rel_l2.toExponential(2)} greedy ${r.greedy_agree}/${r.greedy_checked}`,
          );
          ok(r.passed, `prompt ${r.prompt}: ${JSON.stringify(r)} (bounds ${JSON.stringify(tol)})`);
          ok(r.greedy_checked > 0, "some greedy steps were checked");
        }
      } finally {
        model.destroy();
      }
    });
  });
}
