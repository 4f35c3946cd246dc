/**
 * Weight dtypes as stored in safetensors. Kernels read F16 and BF16 weights packed two per
 * u32 and widen them in-kernel to f32 (BF16 is never narrowed to F16, whose range is smaller).
 */
import type { QuantType } from "./quant/formats.ts";

/** Float weight dtypes of safetensors checkpoints. */
export type WeightDtype = "f32" | "f16" | "bf16";

/** A weight's element type on the GPU: a float dtype, or a GGUF block-quantized type. */
export type TensorDtype = WeightDtype | QuantType;

/** Whether `d` is a float dtype (else a GGUF block-quantized type). */
export function isFloatDtype(d: TensorDtype): d is WeightDtype {
  return d === "f32" || d === "f16" || d === "bf16";
}

/** The value of the `WEIGHT_DTYPE` override constant each kernel reads. */
export const DTYPE_CODE: Record<WeightDtype, number> = { f32: 0, f16: 1, bf16: 2 };

/** Bytes per element of each float dtype. */
export const DTYPE_BYTES: Record<WeightDtype, number> = { f32: 4, f16: 2, bf16: 2 };

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE half bits to a number. */
export function f16ToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** A number to IEEE half bits, rounding to nearest even. */
export function numberToF16(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rem > mid || (rem === mid && (half & 1))) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (half & 1))) half++;
  e = half >> 10;
  return sign | half;
}

/** BF16 bits to a number. */
export function bf16ToNumber(b: number): number {
  u32[0] = (b & 0xffff) << 16;
  return f32[0]!;
}

/** A number to BF16 bits, rounding to nearest even. */
export function numberToBf16(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  if ((x & 0x7f800000) === 0x7f800000 && (x & 0x7fffff)) return (x >>> 16) | 0x40;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

/** Encode numbers into the raw bytes of a weight tensor of `dtype`. */
export function encodeWeights(values: ArrayLike<number>, dtype: WeightDtype): Uint8Array {
  if (dtype === "f32") return new Uint8Array(Float32Array.from(values).buffer);
  const out = new Uint16Array(values.length);
  const enc = dtype === "f16" ? numberToF16 : numberToBf16;
  for (let i = 0; i < values.length; i++) out[i] = enc(values[i]!);
  return new Uint8Array(out.buffer);
}

/** Decode the raw bytes of a weight tensor of `dtype` into float64 numbers. */
export function decodeWeights(bytes: Uint8Array, dtype: WeightDtype): Float64Array {
  if (dtype === "f32") {
    const copy = bytes.slice();
    return Float64Array.from(new Float32Array(copy.buffer, 0, copy.byteLength / 4));
  }
  const copy = bytes.slice();
  const halves = new Uint16Array(copy.buffer, 0, copy.byteLength / 2);
  const dec = dtype === "f16" ? f16ToNumber : bf16ToNumber;
  const out = new Float64Array(halves.length);
  for (let i = 0; i < halves.length; i++) out[i] = dec(halves[i]!);
  return out;
}
