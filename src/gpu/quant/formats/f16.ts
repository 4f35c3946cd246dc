/**
 * F16 as a product format: 32 consecutive IEEE halves, 64 bytes, rounded to nearest even when
 * encoded. GPU decoder: `shaders/quant/f16.wgsl`.
 */
import { f16ToNumber, numberToF16 } from "../../dtype.ts";
import type { QuantBlock, QuantFormat } from "../format.ts";
import { floatFormat } from "./float.ts";

/** F16's geometry as the product kernels cut it (ggml type 1). */
export const F16_BLOCK = {
  type: "F16",
  ggmlType: 1,
  blockSize: 32,
  blockBytes: 64,
  fragment: "f16",
} as const satisfies QuantBlock;

export const F16: QuantFormat = floatFormat(
  F16_BLOCK,
  2,
  (v, at) => f16ToNumber(v.getUint16(at, true)),
  (v, at, x) => v.setUint16(at, numberToF16(x), true),
);
