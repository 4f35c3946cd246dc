/**
 * Every reference model on the GPU (lavapipe in CI) against HF's float64 logits: every prompt
 * position and every greedy step within the dtype's tolerance, greedy tokens agreeing where the
 * reference margin is wide.
 */
import { equal, ok } from "node:assert/strict";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { GpuModel } from "./gpu_model.ts";
import { parseReference, tolerance, verifyModel } from "./verify.ts";
import { testGpu, withErrorScopes } from "../../test/support/gpu.ts";
import { MODELS } from "../../test/support/models.ts";

for (const { name, dir } of MODELS) {
  Deno.test(`${name}: logits match the HF reference at every position and greedy step`, async () => {
    const gpu = await testGpu();
    await withErrorScopes(gpu.device, async () => {
      const path = dir.pathname;
      const reference = parseReference(await Deno.readTextFile(`${path}reference.json`));
      const model = await GpuModel.load(gpu, dirFiles(path));
      try {
        const { passed, results, dtype } = await verifyModel(model, reference);
        const tol = tolerance(dtype);
        for (const r of results) {
          console.log(
            `  ${name} prompt ${r.prompt}: max|err| ${r.max_abs_err.toExponential(2)} rel_l2 ${
              r.rel_l2.toExponential(2)
            } greedy ${r.greedy_agree}/${r.greedy_checked}`,
          );
          ok(
            r.max_abs_err <= tol.maxAbs,
            `prompt ${r.prompt}: max |err| ${r.max_abs_err} > ${tol.maxAbs}`,
          );
          ok(r.rel_l2 <= tol.relL2, `prompt ${r.prompt}: rel L2 ${r.rel_l2} > ${tol.relL2}`);
          equal(r.greedy_agree, r.greedy_checked, `prompt ${r.prompt}: greedy tokens disagree`);
          ok(r.greedy_checked > 0, "some greedy steps were checked");
        }
        equal(results.length, reference.prompts.length);
        ok(passed);
      } finally {
        model.destroy();
      }
    });
  });
}
