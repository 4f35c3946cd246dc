/**
 * F32 as a product format: 32 consecutive little-endian f32, 128 bytes. GPU decoder:
 * `shaders/formats/f32.wgsl`.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { floatFormat } from "./float.ts";

/** F32's geometry as the product kernels cut it (ggml type 0, one element per ggml "block"). */
export const F32_BLOCK: QuantBlockOf<"F32"> = quantBlock("F32", 0, 32, 128);

export const F32: WeightFormat = floatFormat(
  F32_BLOCK,
  4,
  (v, at) => v.getFloat32(at, true),
  (v, at, x) => v.setFloat32(at, x, true),
);
