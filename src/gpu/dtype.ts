/**
 * Weight dtypes as stored in safetensors. Kernels read F16 and BF16 weights packed two per
 * u32 and widen them in-kernel to f32 (BF16 is never narrowed to F16, whose range is smaller).
 */
import type { QuantType } from "./formats/blocks.ts";
import { bf16ToNumber, f16ToNumber, numberToBf16, numberToF16 } from "./formats/halves.ts";

export { bf16ToNumber, f16ToNumber, numberToBf16, numberToF16 };

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
