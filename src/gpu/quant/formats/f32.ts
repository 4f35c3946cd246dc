/**
 * F32 as a product format: 32 consecutive little-endian f32, 128 bytes. GPU decoder:
 * `shaders/quant/f32.wgsl`.
 */
import type { QuantBlock, QuantFormat } from "../format.ts";
import { floatFormat } from "./float.ts";

/** F32's geometry as the product kernels cut it (ggml type 0, one element per ggml "block"). */
export const F32_BLOCK = {
  type: "F32",
  ggmlType: 0,
  blockSize: 32,
  blockBytes: 128,
  fragment: "f32",
} as const satisfies QuantBlock;

export const F32: QuantFormat = floatFormat(
  F32_BLOCK,
  4,
  (v, at) => v.getFloat32(at, true),
  (v, at, x) => v.setFloat32(at, x, true),
);
