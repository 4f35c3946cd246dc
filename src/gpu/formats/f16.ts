/**
 * F16 as a product format: 32 consecutive IEEE halves, 64 bytes, rounded to nearest even when
 * encoded. GPU decoder: `shaders/formats/f16.wgsl`.
 */
import { f16ToNumber, numberToF16 } from "./halves.ts";
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { floatFormat } from "./float.ts";

/** F16's geometry as the product kernels cut it (ggml type 1). */
export const F16_BLOCK: QuantBlockOf<"F16"> = quantBlock("F16", 1, 32, 64);

export const F16: WeightFormat = floatFormat(
  F16_BLOCK,
  2,
  (v, at) => f16ToNumber(v.getUint16(at, true)),
  (v, at, x) => v.setUint16(at, numberToF16(x), true),
);
