/**
 * Every format a product kernel reads weights in (`matvec_quant.wgsl`, `gemm_quant.wgsl`, composed
 * per format): the GGUF block-quantized formats of `formats.ts` and the float ones, F32, F16 and
 * BF16 (`formats/f32.ts`, `f16.ts`, `bf16.ts`), whose "block" is 32 consecutive elements. A
 * weight of any of them is `k / blockSize` blocks per row, and the kernels know no more of it
 * than the format contract (`format.ts`).
 */
import { EngineError } from "../../contract/errors.ts";
import { isFloatDtype, type TensorDtype, type WeightDtype } from "../dtype.ts";
import type { QuantFormat } from "./format.ts";
import { quantFormat } from "./formats.ts";
import { BF16 } from "./formats/bf16.ts";
import { F16 } from "./formats/f16.ts";
import { F32 } from "./formats/f32.ts";

/** The float formats by dtype. */
export const FLOAT_FORMATS: Readonly<Record<WeightDtype, QuantFormat>> = {
  f32: F32,
  f16: F16,
  bf16: BF16,
};

/** The product format of a weight dtype, float or block-quantized. */
export function productFormat(dtype: TensorDtype): QuantFormat {
  return isFloatDtype(dtype) ? FLOAT_FORMATS[dtype] : quantFormat(dtype);
}

/**
 * Whether the product kernels take a weight of `dtype` with `k` columns: k a whole number of
 * the format's blocks (32 elements for floats). Float weights of other widths take the general
 * float GEMM (`gemm.wgsl`); block-quantized ones cannot have them.
 */
export function productTakes(dtype: TensorDtype, k: number): boolean {
  return Number.isInteger(k) && k >= 1 && k % productFormat(dtype).blockSize === 0;
}

/** Bytes of one weight row of `k` elements in format `f`; k must be a whole number of blocks. */
export function productRowBytes(f: QuantFormat, k: number): number {
  if (!(Number.isInteger(k) && k >= 1 && k % f.blockSize === 0)) {
    throw EngineError.invalidArgument(
      `${f.type}: row length ${k} is not a positive multiple of the block size ${f.blockSize}`,
    );
  }
  return (k / f.blockSize) * f.blockBytes;
}
