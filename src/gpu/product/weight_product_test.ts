import { uploadBuffer } from "../buffers.ts";
import { fusedLinearRef, linearRef } from "../../reference/kernels/dense.ts";
import { type Epilogue } from "./args.ts";
import { prepareLinear, prepareWeightProduct } from "./product.ts";
import { isGated } from "./args.ts";
import { productTakes } from "../formats/registry.ts";
import { assertSumsClose, testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import {
  asF32,
  f32Buffer,
  outBuffer,
  runRead,
  seeded,
  WEIGHT_DTYPES as DTYPES,
  weights,
} from "../../../test/support/kernel_harness.ts";

/**
 * c of `sumsTolerance`, c·u·(√k + 4)·(rms(ref) + |ref|): the worst errors measured over this
 * file's cases on lavapipe are 0.58 of the bound at c = 1 for stored and accumulated products and
 * 0.95 for SwiGLU ones (`KILN_TOL_REPORT=1`), so c = 4 and 6 leave them 6x to 7x above. (The
 * bounds were 1e-5·k and 3e-5·k + 1e-5·|ref|, of which the worst case used 0.5 %.)
 */
const SUM_C = 4;
const SWIGLU_C = 6;

// Shapes for every path: the product kernels (K % 32 == 0; matrix-vector for a few rows, tiled
// above) and the general GEMM's vec4 (K % 4 or 8 == 0) and scalar (odd K) loads.
const SHAPES = [
  [1, 131, 64],
  [3, 64, 128],
  [17, 45, 33],
  [40, 70, 96],
  [1, 5, 1],
  [1, 33, 256],
  [8, 7, 264],
  [9, 130, 8],
] as const;

for (const dtype of DTYPES) {
  for (const [m, n, k] of SHAPES) {
    Deno.test(`linear ${dtype} M=${m} N=${n} K=${k} with and without bias`, async () => {
      const { device } = await testGpu();
      await withErrorScopes(device, async () => {
        const w = weights(2 + m, n * k, dtype);
        const b = asF32(seeded(3 + n, n));
        const x = asF32(seeded(4 + k, m * k));
        for (const withBias of [false, true]) {
          const y = outBuffer(device, "lin:y", m * n);
          const d = await prepareLinear(device, {
            x: f32Buffer(device, "lin:x", x),
            w: uploadBuffer(device, "lin:w", w.bytes),
            ...(withBias ? { bias: f32Buffer(device, "lin:b", b) } : {}),
            y,
            m,
            n,
            k,
            type: dtype,
          });
          const got = await runRead(device, [d], y, m * n);
          assertSumsClose(
            got,
            linearRef(x, w.values, withBias ? b : undefined, m, n, k),
            k,
            SUM_C,
            `linear ${dtype} ${m}x${n}x${k}`,
          );
        }
      });
    });
  }
}

const EPILOGUES: Epilogue[] = ["store", "accumulate", "swiglu", "geglu"];

// The fused product (RMSNorm before, residual add or SwiGLU after): in one dispatch of the
// product kernels when K is a multiple of 32, with one thread per row (CPU adapters) and split
// rows (GPUs) at a few rows, and through the unfused general GEMM for other K.
for (const dtype of DTYPES) {
  const fusedShapes = [
    [1, 131, 64],
    [3, 65, 96],
    [8, 7, 288],
    [17, 9, 160],
    [3, 65, 136],
    [11, 30, 8],
  ] as const;
  for (const [m, n, k] of fusedShapes) {
    Deno.test(`fused linear ${dtype} M=${m} N=${n} K=${k}: norm x epilogue`, async () => {
      const { device } = await testGpu();
      await withErrorScopes(device, async () => {
        const w = weights(5 + m, 2 * n * k, dtype);
        const b = asF32(seeded(6 + n, n));
        const g = asF32(seeded(7 + k, k, 1.5));
        const x = asF32(seeded(8 + k, m * k, 2));
        const y0 = asF32(seeded(9 + n, m * n));
        const scratch = {
          normed: outBuffer(device, "fused:normed", m * k),
          product: outBuffer(device, "fused:product", m * 2 * n),
        };
        // threadsPerRow applies to the matrix-vector kernel, which takes up to 3 rows on any paths.
        const threads = productTakes(dtype, k) && m <= 3 ? [1, 32] : [undefined];
        // Each pipeline variant takes a while to compile on a CPU adapter: every combination
        // for F16, and the two extremes for the dtypes (which only change the weight decode).
        const combos = dtype === "f16"
          ? EPILOGUES.flatMap((e) => [[e, false], [e, true]] as const)
          : [["store", false], ["swiglu", true], ["accumulate", true], ["geglu", false]] as const;
        for (const [epilogue, withNorm] of combos) {
          {
            for (const threadsPerRow of threads) {
              const withBias = !isGated(epilogue) && m % 2 === 1;
              const y = f32Buffer(device, "fused:y", y0);
              const norm = { weight: f32Buffer(device, "fused:g", g), eps: 1e-5 };
              const p = await prepareWeightProduct(
                device,
                {
                  x: f32Buffer(device, "fused:x", x),
                  w: uploadBuffer(device, "fused:w", w.bytes),
                  ...(withBias ? { bias: f32Buffer(device, "fused:b", b) } : {}),
                  y,
                  m,
                  n,
                  k,
                  type: dtype,
                  epilogue,
                  ...(withNorm ? { norm } : {}),
                  ...(threadsPerRow ? { threadsPerRow } : {}),
                },
                scratch,
                "fused",
              );
              const want = fusedLinearRef(x, w.values, withBias ? b : undefined, m, n, k, {
                epilogue,
                y0,
                ...(withNorm ? { norm: { weight: g, eps: 1e-5 } } : {}),
              });
              const got = await runRead(device, p, y, m * n);
              assertSumsClose(
                got,
                want,
                k,
                isGated(epilogue) ? SWIGLU_C : SUM_C,
                `${dtype} ${m}x${n}x${k} ${epilogue} norm=${withNorm} tpr=${threadsPerRow}`,
              );
            }
          }
        }
      });
    });
  }
}
