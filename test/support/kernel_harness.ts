/** Small helpers for kernel tests: seeded data, buffers from arrays, run-and-read. */
import { readF32, storageBuffer, uploadBuffer } from "../../src/gpu/buffers.ts";
import { type Dispatch, submitDispatches } from "../../src/gpu/dispatch.ts";
import { decodeWeights, encodeWeights, type WeightDtype } from "../../src/gpu/dtype.ts";

/** Deterministic pseudo-random numbers in [-scale, scale) (mulberry32). */
export function seeded(seed: number, n: number, scale = 1): Float64Array {
  let a = seed >>> 0;
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = ((((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1) * scale;
  }
  return out;
}

export const f32Buffer = (device: GPUDevice, label: string, data: ArrayLike<number>): GPUBuffer =>
  uploadBuffer(device, label, Float32Array.from(data));

export const u32Buffer = (device: GPUDevice, label: string, data: ArrayLike<number>): GPUBuffer =>
  uploadBuffer(device, label, Uint32Array.from(data));

export const outBuffer = (device: GPUDevice, label: string, floats: number): GPUBuffer =>
  storageBuffer(device, label, floats * 4);

/** Submit the dispatches and read `count` floats of `out`. */
export async function runRead(
  device: GPUDevice,
  dispatches: readonly Dispatch[],
  out: GPUBuffer,
  count: number,
): Promise<Float32Array> {
  submitDispatches(device, dispatches, "test");
  return await readF32(device, out, count);
}

/** Values as the f32 GPU sees them (inputs are rounded to f32 before the reference runs). */
export const asF32 = (values: ArrayLike<number>): Float64Array =>
  Float64Array.from(Float32Array.from(values));

/** The weight dtypes every dense kernel reads. */
export const WEIGHT_DTYPES: WeightDtype[] = ["f32", "f16", "bf16"];

/** Seeded weights as stored (rounded to `dtype`), and the same values decoded for references. */
export function weights(
  seed: number,
  n: number,
  dtype: WeightDtype,
  scale = 0.5,
): { bytes: Uint8Array; values: Float64Array } {
  const bytes = encodeWeights(seeded(seed, n, scale), dtype);
  return { bytes, values: decodeWeights(bytes, dtype) };
}

/**
 * Attention's bound, `tol + |ref|·eps` with both this: the outputs are softmax-weighted means of
 * values in [-1, 1), and the worst error measured over `attention_test.ts` and
 * `attention_gqa_test.ts` on lavapipe is 1.7e-7, 6x below (the bound was 1e-5 + 1e-4·|ref|).
 */
export const ATTN_TOL = 1e-6;
