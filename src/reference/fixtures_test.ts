/**
 * Every reference model on the GPU (lavapipe in CI) against HF's float64 logits: every prompt
 * position and every greedy step within the KV cache's bound (`tolerance`), greedy tokens
 * agreeing where the reference margin is wide. Each case runs through both kernel paths
 * (`src/gpu/paths.ts`) whatever the adapter: `cpu` (one thread per output row up to 3 rows, the
 * register-tiled GEMM above, no split-K) and `gpu` (the staged GEMM for the prompts over 32
 * tokens, 32 threads per row for the rest, split-K decode attention).
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { GpuModel } from "../runtime/gpu_model.ts";
import { parseReference, tolerance, verifyModel } from "./verify.ts";
import { PATH_KINDS } from "../gpu/paths.ts";
import { testGpu, withErrorScopes } from "../../test/support/gpu.ts";
import { MODELS } from "../../test/support/models.ts";

// Twice per model: with an f32 KV cache (the f32 arithmetic on the stored weights against HF)
// and with the default cache (f16 for 16-bit weights), each at its bound (see `tolerance`).
for (const { name, dir } of MODELS) {
  for (const kvDtype of ["f32", undefined] as const) {
    for (const paths of PATH_KINDS) {
      Deno.test(`${name}: logits match the HF reference at every position and greedy step (KV ${kvDtype ?? "default"}) (${paths} paths)`, async () => {
        const gpu = await testGpu(paths);
        await withErrorScopes(gpu.device, async () => {
          const path = dir.pathname;
          const reference = parseReference(await Deno.readTextFile(`${path}reference.json`));
          const model = await GpuModel.load(gpu, dirFiles(path), kvDtype ? { kvDtype } : {});
          try {
            const { passed, results } = await verifyModel(model, reference);
            const tol = tolerance(model.kvDtype);
            for (const r of results) {
              console.log(
                `  ${name} (KV ${model.kvDtype}, ${paths} paths) prompt ${r.prompt}: max|err| ${
                  r.max_abs_err.toExponential(2)
                } (bound ${r.max_abs_bound.toExponential(2)}) rel_l2 ${
                  r.rel_l2.toExponential(2)
                } greedy ${r.greedy_agree}/${r.greedy_checked}`,
              );
              const bound = tol.maxAbs * Math.max(1, r.max_abs_ref);
              equal(r.max_abs_bound, bound);
              ok(
                r.max_abs_err <= bound,
                `prompt ${r.prompt}: max |err| ${r.max_abs_err} > ${bound}`,
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
  }
}
