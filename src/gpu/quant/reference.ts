/** Float64 reference for `prepareQuantMatvec`: the product with the weights as ggml decodes them. */
import { linearRef } from "../reference/dense.ts";
import { dequantize, type QuantType } from "./formats.ts";

/**
 * y[m, n] = Σₖ x[m, k]·W[n, k] (+ bias[n]) (+ y0[m, n]), W the [n, k] matrix that `bytes` (n rows
 * of k / blockSize blocks of `type`) decodes to.
 */
export function quantMatvecRef(
  type: QuantType,
  bytes: Uint8Array,
  x: ArrayLike<number>,
  m: number,
  n: number,
  k: number,
  bias?: ArrayLike<number>,
  y0?: ArrayLike<number>,
): Float64Array {
  const y = linearRef(x, dequantize(type, bytes, n * k), bias, m, n, k);
  if (y0) { for (let i = 0; i < y.length; i++) y[i]! += y0[i]!; }
  return y;
}
