import { ok, rejects } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { uploadBuffer } from "../buffers.ts";
import type { WeightDtype } from "../dtype.ts";
import { linearRef } from "../../reference/kernels/dense.ts";
import { type FloatGemmTile, prepareFloatGemm } from "./float_gemm.ts";
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
 * c of `sumsTolerance`, c·u·(√k + 4)·(rms(ref) + |ref|): the worst error measured over this
 * file's cases on lavapipe is 0.60 of the bound at c = 1 (`KILN_TOL_REPORT=1`), so c = 4 leaves
 * it 6.7x above. (The bound was 1e-5·k + 1e-5·|ref|, of which the worst case used 0.3 %.)
 */
const SUM_C = 4;

/**
 * Every m, n, k value of interest appears at least once: tile edges in m and n, k below, inside
 * and across K tiles, odd k (the scalar path) and k % 8 == 0 (16-byte loads).
 */
const SHAPES = [
  [33, 1, 1],
  [47, 7, 3],
  [130, 65, 63],
  [33, 577, 96],
  [47, 65, 576],
  [130, 7, 96],
  [1, 577, 63],
  [130, 577, 576],
] as const;

/** y before an accumulating product (the residual). */
const RESIDUAL_SEED = 99;

/** Run one product (fresh output buffer) and compare with the float64 reference. */
async function check(
  device: GPUDevice,
  dtype: WeightDtype,
  [m, n, k]: readonly [number, number, number],
  mode: "plain" | "bias" | "accumulate",
  tile?: FloatGemmTile,
): Promise<void> {
  const w = weights(2 + m + n, n * k, dtype);
  const b = asF32(seeded(3 + n, n));
  const x = asF32(seeded(4 + k, m * k));
  const withBias = mode !== "plain";
  const residual = asF32(seeded(RESIDUAL_SEED, m * n, 2));
  const y = mode === "accumulate"
    ? f32Buffer(device, "gemm:y", residual)
    : outBuffer(device, "gemm:y", m * n);
  const d = await prepareFloatGemm(device, {
    x: f32Buffer(device, "gemm:x", x),
    w: uploadBuffer(device, "gemm:w", w.bytes),
    ...(withBias ? { b: f32Buffer(device, "gemm:b", b) } : {}),
    y,
    m,
    n,
    k,
    dtype,
    ...(mode === "accumulate" ? { accumulate: true } : {}),
    ...(tile ? { tile } : {}),
  }, `gemm:${mode}`);
  const got = await runRead(device, [d], y, m * n);
  const ref = linearRef(x, w.values, withBias ? b : undefined, m, n, k);
  if (mode === "accumulate") ref.forEach((v, i) => ref[i] = v + residual[i]!);
  assertSumsClose(got, ref, k, SUM_C, `gemm ${dtype} ${m}x${n}x${k} ${mode}`);
  d.uniform.destroy();
}

for (const dtype of DTYPES) {
  Deno.test(`gemm ${dtype} over odd shapes: plain, with bias, accumulating`, async () => {
    const { device } = await testGpu();
    await withErrorScopes(device, async () => {
      for (const shape of SHAPES) {
        for (const mode of ["plain", "bias", "accumulate"] as const) {
          await check(device, dtype, shape, mode);
        }
      }
    });
  });
}

Deno.test("gemm with other tiles: 64x64 (4x4 per thread), 32x64 (BK 32, no padding), 16x32", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const tiles: FloatGemmTile[] = [
      { wgN: 16, wgM: 16, tm: 4, bk: 16, pad: 1 },
      { wgN: 16, wgM: 4, tm: 8, bk: 32, pad: 0 },
      { wgN: 8, wgM: 8, tm: 2, bk: 8, pad: 1 },
    ];
    for (const tile of tiles) {
      for (const shape of [[47, 65, 576], [33, 577, 63], [130, 7, 96]] as const) {
        await check(device, "f16", shape, "accumulate", tile);
        await check(device, "f32", shape, "bias", tile);
      }
    }
  });
});

Deno.test("gemm rejects bad sizes, small buffers and bad tiles with InvalidArgument", async () => {
  const { device } = await testGpu();
  const x = outBuffer(device, "gemm:bad-x", 16);
  const w = outBuffer(device, "gemm:bad-w", 16);
  const y = outBuffer(device, "gemm:bad-y", 16);
  const base = { x, w, y, m: 4, n: 4, k: 4, dtype: "f32" as const };
  const bad: Parameters<typeof prepareFloatGemm>[1][] = [
    { ...base, m: 0 },
    { ...base, k: 2.5 },
    { ...base, n: 8 }, // w and y too small
    { ...base, k: 8 }, // x too small
    { ...base, b: outBuffer(device, "gemm:bad-b", 2) },
    { ...base, tile: { wgN: 16, wgM: 16, tm: 4, bk: 12, pad: 0 } },
    { ...base, tile: { wgN: 16, wgM: 16, tm: 9, bk: 16, pad: 0 } },
    // Past any device's invocation and workgroup-memory limits.
    { ...base, tile: { wgN: 128, wgM: 128, tm: 4, bk: 16, pad: 0 } },
    { ...base, tile: { wgN: 16, wgM: 16, tm: 8, bk: 4096, pad: 1 } },
  ];
  for (const args of bad) {
    await rejects(async () => await prepareFloatGemm(device, args), (e) => {
      ok(e instanceof EngineError && e.type === "InvalidArgument", String(e));
      return true;
    }, JSON.stringify({ ...args, x: 0, w: 0, y: 0, b: 0 }));
  }
});
