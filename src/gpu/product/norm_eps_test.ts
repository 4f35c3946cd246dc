/**
 * RMSNorm's epsilon where it decides the result, on the quantized products of the cpu kernel
 * paths (the matrix-vector kernel at one thread per row for a decode step, the `rows` GEMM for a
 * prefill), with the norm folded in: activations so small (|x| <= 1e-3, mean square ~3e-7) that
 * epsilon (1e-5) is 30x the mean square and sets the scale 1/√(mean x² + eps), against the
 * float64 reference (`quantMatvecRef`, dequantized weights, float64 loops). Model-level tests
 * cannot see a wrong epsilon here: Qwen2's 1e-6 is small beside its activations. Planted: the
 * same kernels with epsilon dropped (0, as a kernel that forgets it) and x10; the comparison
 * must reject both while the kernel as written passes.
 */
import { ok } from "node:assert/strict";
import { uploadBuffer } from "../buffers.ts";
import type { QuantType } from "../formats/registry.ts";
import { quantMatvecRef } from "../../reference/kernels/quant.ts";
import { randomBlocks } from "../formats/random_blocks.ts";
import { loadQuantTables } from "../formats/tables.ts";
import { gemmMinRows } from "./gemm.ts";
import { prepareFormatProduct } from "./product.ts";
import { sumsTolerance, testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import {
  asF32,
  f32Buffer,
  outBuffer,
  runRead,
  seeded,
} from "../../../test/support/kernel_harness.ts";

await loadQuantTables();

const EPS = 1e-5;
const N = 24;
/** The f32 bound of the products' file (`product/matvec_test.ts`): c = 2. */
const SUM_C = 2;

/**
 * Worst |kernel - float64| over the bound (`sumsTolerance`, c = 2) of `type` at `m` rows, the
 * kernel given `kernelEps` and the reference `EPS`: <= 1 passes.
 */
async function worstRatio(
  device: GPUDevice,
  type: QuantType,
  m: number,
  kernelEps: number,
): Promise<number> {
  const k = 256;
  const w = randomBlocks(type, N * k, 7);
  const x = asF32(seeded(11, m * k, 1e-3));
  const gamma = asF32(seeded(12, k).map((g) => 1 + 0.3 * g));
  const y = outBuffer(device, "norm-eps:y", m * N);
  const d = await prepareFormatProduct(device, {
    x: f32Buffer(device, "norm-eps:x", x),
    w: uploadBuffer(device, "norm-eps:w", w),
    y,
    m,
    n: N,
    k,
    type,
    norm: { weight: f32Buffer(device, "norm-eps:g", gamma), eps: kernelEps },
  }, "norm-eps");
  const got = await runRead(device, [d], y, m * N);
  const ref = quantMatvecRef(type, w, x, m, N, k, { norm: { weight: gamma, eps: EPS } });
  const { tol, eps } = sumsTolerance(ref, k, SUM_C);
  let worst = 0;
  ref.forEach((r, i) => worst = Math.max(worst, Math.abs(got[i]! - r) / (tol + eps * Math.abs(r))));
  return worst;
}

for (const type of ["Q8_0", "Q4_K"] as const) {
  Deno.test(`RMSNorm epsilon on the cpu paths' ${type} products (decode and prefill rows): eps dominating the mean square matches float64; eps dropped or x10 is rejected`, async () => {
    const { device } = await testGpu("cpu");
    await withErrorScopes(device, async () => {
      for (const m of [1, gemmMinRows(device) + 5]) {
        const path = m === 1 ? "matrix-vector" : "rows GEMM";
        const real = await worstRatio(device, type, m, EPS);
        const dropped = await worstRatio(device, type, m, 0);
        const tenfold = await worstRatio(device, type, m, 10 * EPS);
        console.log(
          `  ${type} ${path} (m = ${m}): error / bound ${real.toFixed(3)}; eps dropped ` +
            `${dropped.toExponential(2)}, eps x10 ${tenfold.toExponential(2)}`,
        );
        ok(real <= 1, `${type} ${path}: ${real} of the bound`);
        ok(dropped > 1, `${type} ${path}: eps dropped passed (${dropped} of the bound)`);
        ok(tenfold > 1, `${type} ${path}: eps x10 passed (${tenfold} of the bound)`);
      }
    });
  });
}
