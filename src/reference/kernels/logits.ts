/** Reference for `shaders/logits.wgsl`. */
import { f16ToNumber } from "../../gpu/dtype.ts";

/**
 * `count` elements of `src` from `srcOffset`, widened to float64: f32 words as they are, f16
 * values (16-bit patterns) exactly.
 */
export function copyRowRef(
  src: Float32Array | Uint16Array,
  srcOffset: number,
  count: number,
): Float64Array {
  const row = src.subarray(srcOffset, srcOffset + count);
  return src instanceof Uint16Array ? Float64Array.from(row, f16ToNumber) : Float64Array.from(row);
}
