/**
 * The pipelines a step dispatches on each kind of kernel paths (`src/gpu/paths.ts`), read from
 * the step's plan: so the fixture tests' `(gpu paths)` runs on a CPU adapter are known to run a
 * GPU's kernels, and the switch cannot silently do nothing. Float and quantized weights take the
 * same product kernels (float weights are formats of them). On `gpu` paths: 32 threads per row of
 * the matrix-vector kernel up to 32 rows, the staged GEMM above, and split-K decode attention
 * (the fixture's context of 512 keys takes two splits); on `cpu` paths, one thread per row up to
 * 3 rows, the register-tiled GEMM above, and the rows attention, split into parts of at most 256
 * keys (two for the fixture's context), prefill chunks too.
 */
import { deepStrictEqual as deepEqual, ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { chooseSplits } from "../gpu/kernels/attention.ts";
import { type PathKind } from "../gpu/paths.ts";
import { openCheckpoint } from "../model/checkpoint.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../convert/convert.ts";
import { GpuModel } from "./gpu_model.ts";
import { fileListFiles, type ModelFiles } from "../formats/source.ts";
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
  Deno.test(`attention: split over the keys, then merged (${paths} paths)`, async () => {
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
            : [
              "L0:attention:split attention_rows:rows_split",
              "L0:attention:merge attention:merge",
            ],
          `${tokens} tokens`,
        );
      }
      // A prefill chunk splits only through the rows kernel.
      const prefill = await stepPipelines(model, 5);
      if (gpuPaths) equal(prefill.get("L0:attention")?.entry, "single");
      else equal(prefill.get("L0:attention:split")?.entry, "rows_split");
    });
  });

  for (const quantized of [false, true]) {
    const above = gpuPaths ? 32 : 3;
    Deno.test(
      `${quantized ? "Q8_0" : "F32"} products: ${
        gpuPaths ? "32 threads" : "one thread"
      } per row, the ${
        gpuPaths ? "staged" : "register-tiled"
      } GEMM above ${above} rows, norm and SwiGLU fused (${paths} paths)`,
      async () => {
        await withModel(paths, quantized, async (model) => {
          const products = productLabels(model.config.numLayers);
          for (const tokens of [1, 3, 4, 8, 9, 32, 33]) {
            const gemm = tokens > above;
            const step = await stepPipelines(model, tokens);
            for (const label of products) {
              const p = step.get(label);
              ok(p, `${tokens} tokens: no dispatch ${label} in ${[...step.keys()]}`);
              deepEqual(
                gemm ? [p.shader, p.entry] : [p.shader, p.entry, p.constants.TPR],
                gemm
                  ? ["product/gemm", gpuPaths ? "main" : "rows"]
                  : ["product/matvec", "main", gpuPaths ? 32 : 1],
                `${tokens} tokens, ${label}`,
              );
              equal(p.variant, `${p.shader}:format=${quantized ? "q8_0" : "f32"}`, label);
            }
            equal(step.has("L0:gate_up:swiglu"), false, `${tokens} tokens: no SwiGLU pass`);
            // The LM head takes the one logit row.
            deepEqual(
              [step.get("lm_head")?.shader, step.get("lm_head")?.constants.TPR],
              ["product/matvec", gpuPaths ? 32 : 1],
            );
          }
        });
      },
    );
  }
}
