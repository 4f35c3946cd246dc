/**
 * BF16 as a product format: 32 consecutive bfloat16 (the upper half of an f32), 64 bytes,
 * rounded to nearest even when encoded. GPU decoder: `shaders/quant/bf16.wgsl`.
 */
import { bf16ToNumber, numberToBf16 } from "../../dtype.ts";
import type { QuantBlock, QuantFormat } from "../format.ts";
import { floatFormat } from "./float.ts";

/** BF16's geometry as the product kernels cut it (ggml type 30). */
export const BF16_BLOCK = {
  type: "BF16",
  ggmlType: 30,
  blockSize: 32,
  blockBytes: 64,
  fragment: "bf16",
} as const satisfies QuantBlock;

export const BF16: QuantFormat = floatFormat(
  BF16_BLOCK,
  2,
  (v, at) => bf16ToNumber(v.getUint16(at, true)),
  (v, at, x) => v.setUint16(at, numberToBf16(x), true),
);
