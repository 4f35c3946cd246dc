/**
 * The pipelines a step dispatches on each kind of kernel paths (`src/gpu/paths.ts`), read from
 * the step's plan: so the fixture tests' `(gpu paths)` runs on a CPU adapter are known to run a
 * GPU's kernels, and the switch cannot silently do nothing. On `gpu` paths: the tiled GEMM for
 * the products of a prefill over 32 rows, 64 threads per row of the float matrix-vector kernel,
 * split-K decode attention (the fixture's context of 512 keys takes two splits) and 32 threads
 * per row of the quantized kernel; on `cpu` paths, one thread per row, no GEMM, no split.
 */
import { deepEqual, equal, ok } from "node:assert/strict";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { chooseSplits } from "../gpu/kernels/attention.ts";
import { type PathKind } from "../gpu/paths.ts";
import { openCheckpoint } from "./checkpoint.ts";
import { readHfCheckpoint, writeHfAsGguf } from "./gguf/convert.ts";
import { GpuModel } from "./gpu_model.ts";
import { fileListFiles, type ModelFiles } from "./source.ts";
import { testGpu, withErrorScopes } from "../../test/support/gpu.ts";
import { MODELS } from "../../test/support/models.ts";
import { productLabels, stepPipelines } from "../../test/support/step_pipelines.ts";

const FIXTURE = MODELS.find((m) => m.name === "llama-gqa-f32")!.dir.pathname;

/** The fixture as it is (F32) or quantized to GGUF Q8_0 in memory. */
async function fixtureFiles(quantized: boolean): Promise<ModelFiles> {
  if (!quantized) return dirFiles(FIXTURE);
  const parts: Uint8Array[] = [];
  await writeHfAsGguf(
    await readHfCheckpoint(dirFiles(FIXTURE)),
    (b) => void parts.push(b.slice()),
    { mix: "q8_0" },
  );
  return fileListFiles([new File(parts as BlobPart[], "llama-gqa-f32-q8_0.gguf")]);
}

async function withModel(
  paths: PathKind,
  quantized: boolean,
  fn: (model: GpuModel) => Promise<void>,
): Promise<void> {
  const gpu = await testGpu(paths);
  equal(gpu.caps.paths, paths);
  const checkpoint = await openCheckpoint(await fixtureFiles(quantized));
  await withErrorScopes(gpu.device, async () => {
    const model = await GpuModel.fromCheckpoint(gpu, checkpoint, { kvDtype: "f32" });
    try {
      await fn(model);
    } finally {
      model.destroy();
    }
  });
}

for (const paths of ["cpu", "gpu"] as const) {
  const gpuPaths = paths === "gpu";
  Deno.test(
    `float products: ${
      gpuPaths
        ? "the GEMM above 32 rows, 64 threads per row up to 32"
        : "one thread per row, never the GEMM"
    } (${paths} paths)`,
    async () => {
      await withModel(paths, false, async (model) => {
        const products = productLabels(model.config.numLayers);
        for (const tokens of [1, 32, 33, 64]) {
          const step = await stepPipelines(model, tokens);
          const gemm = gpuPaths && tokens > 32;
          for (const label of products) {
            const p = step.get(label);
            ok(p, `${tokens} tokens: no dispatch ${label} in ${[...step.keys()]}`);
            if (gemm) {
              equal(p.shader, "gemm", `${tokens} tokens, ${label}`);
            } else {
              deepEqual([p.shader, p.constants.TPR], ["matvec", gpuPaths ? 64 : 1], label);
            }
          }
          // The GEMM path normalizes and applies SwiGLU in passes of its own.
          equal(step.has("L0:gate_up:swiglu"), gemm, `${tokens} tokens: a SwiGLU pass`);
          // The LM head takes the one logit row.
          deepEqual(
            [step.get("lm_head")?.shader, step.get("lm_head")?.constants.TPR],
            ["matvec", gpuPaths ? 64 : 1],
          );
        }
      });
    },
  );

  Deno.test(`decode attention: ${gpuPaths ? "split over the keys, then merged" : "one pass"} (${paths} paths)`, async () => {
    await withModel(paths, false, async (model) => {
      ok(chooseSplits(model.config.maxPositionEmbeddings) > 1, "the context is long enough");
      for (const tokens of [1, 4]) {
        const step = await stepPipelines(model, tokens);
        const entries = [...step].filter(([l]) => l.startsWith("L0:attention")).map(([l, p]) =>
          `${l} ${p.shader}:${p.entry}`
        );
        deepEqual(
          entries,
          gpuPaths
            ? ["L0:attention:split attention:split", "L0:attention:merge attention:merge"]
            : ["L0:attention attention:single"],
          `${tokens} tokens`,
        );
      }
      // A prefill never splits.
      const prefill = await stepPipelines(model, 5);
      equal(prefill.get("L0:attention")?.entry, "single");
    });
  });

  Deno.test(
    `quantized products: ${gpuPaths ? "32 threads" : "one thread"} per row, the ${
      gpuPaths ? "staged" : "register-tiled"
    } GEMM above ${gpuPaths ? 32 : 8} rows (${paths} paths)`,
    async () => {
      await withModel(paths, true, async (model) => {
        const products = productLabels(model.config.numLayers);
        // 1 and 8 rows: matvec on both; 9 and 32: the GEMM on cpu paths only; 33: on both.
        for (const tokens of [1, 8, 9, 32, 33]) {
          const gemm = tokens > (gpuPaths ? 32 : 8);
          const step = await stepPipelines(model, tokens);
          for (const label of products) {
            const p = step.get(label);
            ok(p, `${tokens} tokens: no dispatch ${label} in ${[...step.keys()]}`);
            deepEqual(
              gemm ? [p.shader, p.entry] : [p.shader, p.entry, p.constants.TPR],
              gemm
                ? ["gemm_quant", gpuPaths ? "main" : "rows"]
                : ["matvec_quant", "main", gpuPaths ? 32 : 1],
              `${tokens} tokens, ${label}`,
            );
          }
        }
      });
    },
  );
}
