/**
 * BF16 as a product format: 32 consecutive bfloat16 (the upper half of an f32), 64 bytes,
 * rounded to nearest even when encoded. GPU decoder: `shaders/formats/bf16.wgsl`.
 */
import { bf16ToNumber, numberToBf16 } from "./halves.ts";
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { floatFormat } from "./float.ts";

/** BF16's geometry as the product kernels cut it (ggml type 30). */
export const BF16_BLOCK: QuantBlockOf<"BF16"> = quantBlock("BF16", 30, 32, 64);

export const BF16: WeightFormat = floatFormat(
  BF16_BLOCK,
  2,
  (v, at) => bf16ToNumber(v.getUint16(at, true)),
  (v, at, x) => v.setUint16(at, numberToBf16(x), true),
);
