/**
 * Matrix-vector products against GGUF block-quantized weights (`shaders/matvec_quant.wgsl`),
 * dequantizing in registers: the weight buffer holds the blocks exactly as a GGUF file stores
 * them, and no dequantized copy is ever made.
 */
import { EngineError } from "../../contract/errors.ts";
import { storageBuffer } from "../buffers.ts";
import { grid } from "../dispatch.ts";
import { quantFormat, quantizedRowBytes, type QuantType } from "../quant/formats.ts";
import { type KernelDispatch, prepareKernel } from "./kernel.ts";

export interface QuantMatvecArgs {
  /** Activations, f32 [m, k]. */
  x: GPUBuffer;
  /** Weights, [n] rows of k / blockSize blocks of `type`, bytes as in a GGUF tensor. */
  w: GPUBuffer;
  /** Output, f32 [m, n]. */
  y: GPUBuffer;
  m: number;
  n: number;
  k: number;
  type: QuantType;
  /** f32 [n], added to every row. */
  bias?: GPUBuffer;
  /** Add the product to what `y` holds (y += x·Wᵀ) instead of overwriting it. */
  accumulate?: boolean;
}

/** Activation rows per z-slice of workgroups; more rows take more z-slices. */
export const QUANT_MATVEC_ROWS = 8;
/** Output rows per workgroup (32 threads each). */
const ROWS_PER_WORKGROUP = 8;

const noBias = new WeakMap<GPUDevice, GPUBuffer>();

function emptyBias(device: GPUDevice): GPUBuffer {
  let b = noBias.get(device);
  if (b === undefined) noBias.set(device, b = storageBuffer(device, "matvec_quant:no-bias", 4));
  return b;
}

function checkDims(a: QuantMatvecArgs): void {
  for (const [name, v] of [["m", a.m], ["n", a.n], ["k", a.k]] as const) {
    if (!Number.isInteger(v) || v <= 0) {
      throw EngineError.invalidArgument(
        `matvec_quant: ${name} must be a positive integer, got ${v}`,
      );
    }
  }
}

function checkBuffer(device: GPUDevice, what: string, b: GPUBuffer, bytes: number): void {
  if (b.size < bytes) {
    throw EngineError.invalidArgument(
      `matvec_quant: ${what} holds ${b.size} bytes, needs ${bytes}`,
    );
  }
  if (bytes > device.limits.maxStorageBufferBindingSize) {
    throw EngineError.invalidArgument(
      `matvec_quant: ${what} needs ${bytes} bytes, over this device's binding limit of ${device.limits.maxStorageBufferBindingSize}`,
    );
  }
}

/**
 * y[m, n] = Σₖ x[m, k]·W[n, k] (+ bias[n]) (+ y[m, n] when `accumulate`), W quantized as `type`.
 * Built for decode (m ≤ 8, one pass over the weights); a larger m is taken 8 rows at a time in
 * z-slices that each decode the weights again — correct, but a prefill fallback, not a tiled
 * matmul. `k` must be a multiple of the block size (32, or 256 for the K-quants).
 */
export async function prepareQuantMatvec(
  device: GPUDevice,
  a: QuantMatvecArgs,
  label = "matvec_quant",
): Promise<KernelDispatch> {
  const f = quantFormat(a.type);
  checkDims(a);
  const rowBytes = quantizedRowBytes(f.type, a.k);
  checkBuffer(device, "x", a.x, a.m * a.k * 4);
  checkBuffer(device, "w", a.w, a.n * rowBytes);
  checkBuffer(device, "y", a.y, a.m * a.n * 4);
  if (a.bias) checkBuffer(device, "bias", a.bias, a.n * 4);
  const slices = Math.ceil(a.m / QUANT_MATVEC_ROWS);
  if (slices > device.limits.maxComputeWorkgroupsPerDimension) {
    throw EngineError.invalidArgument(`matvec_quant: m = ${a.m} is too many rows for one dispatch`);
  }
  const [gx, gy] = grid(device, Math.ceil(a.n / ROWS_PER_WORKGROUP));
  return await prepareKernel(device, {
    label,
    shader: "matvec_quant",
    entry: "main",
    constants: {
      FORMAT: f.code,
      ROWS: Math.min(a.m, QUANT_MATVEC_ROWS),
      HAS_BIAS: a.bias ? 1 : 0,
      ACCUMULATE: a.accumulate ? 1 : 0,
    },
    uniform: [a.m, a.n, a.k, 0],
    buffers: { 1: a.x, 2: a.w, 3: a.bias ?? emptyBias(device), 4: a.y },
    workgroups: [gx, gy, slices],
  });
}
