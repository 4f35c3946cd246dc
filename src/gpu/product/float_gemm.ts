/**
 * The general float product (`shaders/product/float_gemm.wgsl`), register-blocked, for any shape:
 * y[m, n] = x[m, :] · W[n, :] (+ b[n]), or y += that with `accumulate` (a residual add fused
 * into the epilogue). The product kernels take float weights whose K is a multiple of 32
 * (`product.ts`); this one takes the other widths, with the RMSNorm and the gated activation as
 * passes of their own (`prepareUnfusedProduct`).
 */
import { EngineError } from "../../contract/errors.ts";
import { storageBuffer } from "../buffers.ts";
import { DTYPE_BYTES, DTYPE_CODE, type WeightDtype } from "../dtype.ts";
import { type KernelDispatch, prepareKernel } from "../kernels/kernel.ts";
import { prepareGatedHalves, prepareRmsNorm } from "../kernels/dense.ts";
import { gateActivation, isGated, type LinearScratch, type ProductKernelArgs } from "./args.ts";

/** Workgroup shape and register block: a (tm·wgM) x (4·wgN) output tile per workgroup. */
export interface FloatGemmTile {
  /** Threads along n; each computes 4 columns, `wgN` apart. */
  wgN: number;
  /** Threads along m; each computes `tm` rows, `wgM` apart. */
  wgM: number;
  /** Output rows per thread, 1 to 8. */
  tm: number;
  /** K per staged tile, a multiple of 8. */
  bk: number;
  /** vec4 of padding per staged row of workgroup memory (0 or 1). */
  pad: number;
}

/**
 * The default tile: 64x64 outputs, 8x4 per thread, 128 threads, 10,240 bytes of workgroup
 * memory. On lavapipe (`bench/gemm.ts --sweep`) it did 0.60 GFLOP per CPU-second against 0.45
 * for 4x4 per thread (256 threads); smaller or one-row-of-threads tiles did no better.
 */
export const FLOAT_GEMM_TILE: Readonly<FloatGemmTile> = { wgN: 16, wgM: 8, tm: 8, bk: 16, pad: 1 };

export interface FloatGemmArgs {
  /** f32 [m, k], row-major. */
  x: GPUBuffer;
  /** [n, k] row-major in `dtype`. */
  w: GPUBuffer;
  /** [n], f32. */
  b?: GPUBuffer;
  /** f32 [m, n]: written, or added to with `accumulate`. */
  y: GPUBuffer;
  m: number;
  n: number;
  k: number;
  dtype: WeightDtype;
  /** y += x·Wᵀ (+ b) instead of y = x·Wᵀ (+ b). */
  accumulate?: boolean;
  /** Another tile shape (benchmarks); default `FLOAT_GEMM_TILE`. */
  tile?: FloatGemmTile;
}

/** Bytes of workgroup memory a tile stages: x and W rows of bk/4 + pad vec4. */
export function floatGemmTileBytes(t: FloatGemmTile): number {
  return (t.tm * t.wgM + 4 * t.wgN) * (t.bk / 4 + t.pad) * 16;
}

const noBias = new WeakMap<GPUDevice, GPUBuffer>();

/** The shader always declares the bias binding; without a bias it reads this (HAS_BIAS off). */
function emptyBias(device: GPUDevice): GPUBuffer {
  let b = noBias.get(device);
  if (b === undefined) noBias.set(device, b = storageBuffer(device, "gemm:no-bias", 4, "other"));
  return b;
}

function positive(name: string, v: number): void {
  if (!Number.isSafeInteger(v) || v < 1) {
    throw EngineError.invalidArgument(`gemm: ${name} must be a positive integer, got ${v}`);
  }
}

function fits(name: string, buffer: GPUBuffer, bytes: number): void {
  if (buffer.size < bytes) {
    throw EngineError.invalidArgument(
      `gemm: ${name} holds ${buffer.size} bytes, the product needs ${bytes}`,
    );
  }
}

function checkTile(device: GPUDevice, t: FloatGemmTile): void {
  const ok = [t.wgN, t.wgM, t.tm, t.bk, t.pad].every(Number.isSafeInteger) &&
    t.wgN >= 1 && t.wgM >= 1 && t.tm >= 1 && t.tm <= 8 && t.bk >= 8 && t.bk % 8 === 0 &&
    (t.pad === 0 || t.pad === 1);
  if (!ok) throw EngineError.invalidArgument(`gemm: bad tile ${JSON.stringify(t)}`);
  const lim = device.limits;
  if (
    t.wgN * t.wgM > lim.maxComputeInvocationsPerWorkgroup ||
    t.wgN > lim.maxComputeWorkgroupSizeX || t.wgM > lim.maxComputeWorkgroupSizeY ||
    floatGemmTileBytes(t) > lim.maxComputeWorkgroupStorageSize
  ) {
    throw EngineError.invalidArgument(
      `gemm: tile ${JSON.stringify(t)} exceeds the device's workgroup limits`,
    );
  }
}

/**
 * y = x·Wᵀ (+ b), or y += x·Wᵀ (+ b) with `accumulate`, for any m, n, k. Loads 16 bytes at a
 * time when k allows (k % 4 == 0 for F32 weights, k % 8 == 0 for F16/BF16), one element at a
 * time otherwise. Throws `InvalidArgument` for bad sizes, buffers too small or a grid too large.
 */
export function prepareFloatGemm(
  device: GPUDevice,
  a: FloatGemmArgs,
  label = "gemm",
): Promise<KernelDispatch> {
  positive("m", a.m);
  positive("n", a.n);
  positive("k", a.k);
  if (!(a.dtype in DTYPE_CODE)) throw EngineError.invalidArgument(`gemm: dtype ${a.dtype}`);
  const bytes = DTYPE_BYTES[a.dtype];
  fits("x", a.x, a.m * a.k * 4);
  fits("w", a.w, a.n * a.k * bytes);
  fits("y", a.y, a.m * a.n * 4);
  if (a.b) fits("b", a.b, a.n * 4);
  const t = a.tile ?? FLOAT_GEMM_TILE;
  checkTile(device, t);
  const gx = Math.ceil(a.n / (4 * t.wgN));
  const gy = Math.ceil(a.m / (t.tm * t.wgM));
  const max = device.limits.maxComputeWorkgroupsPerDimension;
  if (gx > max || gy > max) {
    throw EngineError.invalidArgument(`gemm: ${gx}x${gy} workgroups exceed the limit ${max}`);
  }
  const vec4 = a.k % (a.dtype === "f32" ? 4 : 8) === 0;
  return prepareKernel(device, {
    label,
    shader: "product/float_gemm",
    entry: vec4 ? "vec4_k" : "scalar_k",
    constants: {
      WEIGHT_DTYPE: DTYPE_CODE[a.dtype],
      HAS_BIAS: a.b ? 1 : 0,
      ACCUMULATE: a.accumulate ? 1 : 0,
      WG_N: t.wgN,
      WG_M: t.wgM,
      TM: t.tm,
      BK: t.bk,
      PAD: t.pad,
    },
    uniform: [a.m, a.n, a.k, 0],
    buffers: { 1: a.x, 2: a.w, 3: a.b ?? emptyBias(device), 4: a.y },
    workgroups: [gx, gy],
  });
}

/**
 * A product the product kernels do not take (float weights whose K is not a multiple of 32): the
 * RMSNorm, this file's GEMM and the gated activation as separate dispatches through `scratch`
 * (needed then for a norm or a gated epilogue). No output window and no scale.
 */
export async function prepareUnfusedProduct(
  device: GPUDevice,
  a: ProductKernelArgs & { type: WeightDtype },
  scratch: LinearScratch | undefined,
  label: string,
): Promise<KernelDispatch[]> {
  const { x, w, bias: b, y, m, n, k, type: dtype } = a;
  const epilogue = a.epilogue ?? "store";
  const refuse = (why: string) =>
    EngineError.invalidArgument(`${label}: ${why} needs k a multiple of 32, got ${k}`);
  if (a.ldy !== undefined || a.y0 !== undefined) throw refuse("an output window");
  if (a.scale !== undefined && a.scale !== 1) throw refuse("a scaled product");
  if ((a.norm || isGated(epilogue)) && scratch === undefined) {
    throw refuse("a norm or a gated activation without scratch");
  }
  // Prepared together (their pipelines compile side by side), run in this order.
  const parts: Promise<KernelDispatch>[] = [];
  let input = x;
  if (a.norm) {
    parts.push(
      prepareRmsNorm(device, {
        x,
        weight: a.norm.weight,
        y: scratch!.normed,
        rows: m,
        dim: k,
        eps: a.norm.eps,
        dtype: "f32",
      }, `${label}:norm`),
    );
    input = scratch!.normed;
  }
  if (!isGated(epilogue)) {
    const accumulate = epilogue === "accumulate";
    parts.push(
      prepareFloatGemm(
        device,
        { x: input, w, ...(b ? { b } : {}), y, m, n, k, dtype, accumulate },
        label,
      ),
    );
  } else {
    if (b) throw EngineError.invalidArgument(`${label}: no bias with ${epilogue}`);
    parts.push(
      prepareFloatGemm(device, { x: input, w, y: scratch!.product, m, n: 2 * n, k, dtype }, label),
    );
    parts.push(
      prepareGatedHalves(
        device,
        { stacked: scratch!.product, out: y, rows: m, width: n, act: gateActivation(epilogue) },
        `${label}:${epilogue}`,
      ),
    );
  }
  return await Promise.all(parts);
}
