/**
 * Linear kernels against `linearRef` over odd shapes, on the page's device (SwiftShader in the
 * suite: a CPU adapter, so decode shapes take one thread per output row).
 */
import { decodeWeights, encodeWeights, type WeightDtype } from "../../../src/gpu/dtype.ts";
import { uploadBuffer } from "../../../src/gpu/buffers.ts";
import { prepareLinear } from "../../../src/gpu/product/product.ts";
import { linearRef } from "../../../src/reference/kernels/dense.ts";
import { assertSumsClose, boundUsed, sumsTolerance, withErrorScopes } from "../../support/gpu.ts";
import { asF32, f32Buffer, outBuffer, runRead, seeded } from "../../support/kernel_harness.ts";

// M from 1 (the matrix-vector kernel) to 9 (the tiled one), N not a multiple of any
// rows-per-workgroup; K a multiple of 32 takes the product kernels (float weights as formats of
// them), other K the general GEMM (vec4 loads, and scalar ones for the odd K of the last shape).
const SHAPES: readonly (readonly [number, number, number])[] = [
  [1, 131, 64],
  [3, 45, 256],
  [8, 7, 264],
  [9, 7, 288],
  [9, 130, 8],
  [1, 33, 1000],
  [2, 5, 3],
];
const DTYPES: WeightDtype[] = ["f32", "f16", "bf16"];
/**
 * c of `sumsTolerance`, c·u·(√k + 4)·(rms(ref) + |ref|): on SwiftShader the worst case here used
 * 0.58 of the bound at c = 1, so c = 4 leaves it about 7x above (as in `linear_test.ts`; the bound
 * was 1e-5·k + 1e-5·|ref|).
 */
const SUM_C = 4;

export const linearCheck = (
  device: GPUDevice,
): readonly [string, () => Promise<string>] =>
  [
    "linear kernels match the reference",
    async () => {
      let cases = 0, worst = 0;
      for (const dtype of DTYPES) {
        for (const [m, n, k] of SHAPES) {
          await withErrorScopes(device, async () => {
            const wBytes = encodeWeights(seeded(2 + m, n * k, 0.5), dtype);
            const bias = asF32(seeded(3 + n, n, 0.5));
            const x = asF32(seeded(4 + k, m * k));
            for (const withBias of [false, true]) {
              const y = outBuffer(device, "lin:y", m * n);
              const d = await prepareLinear(device, {
                x: f32Buffer(device, "lin:x", x),
                w: uploadBuffer(device, "lin:w", wBytes),
                ...(withBias ? { bias: f32Buffer(device, "lin:b", bias) } : {}),
                y,
                m,
                n,
                k,
                type: dtype,
              });
              const ref = linearRef(
                x,
                decodeWeights(wBytes, dtype),
                withBias ? bias : undefined,
                m,
                n,
                k,
              );
              const got = await runRead(device, [d], y, m * n);
              const { tol, eps } = sumsTolerance(ref, k, SUM_C);
              worst = Math.max(worst, boundUsed(got, ref, tol, eps));
              assertSumsClose(got, ref, k, SUM_C, `linear ${dtype} ${m}x${n}x${k}`);
              cases++;
            }
          });
        }
      }
      return `${cases} cases, the worst within ${(100 * worst).toFixed(0)} % of its bound`;
    },
  ] as const;
