/**
 * The float formats (F32, F16, BF16) as product formats: a "block" is 32 consecutive elements
 * of a row, so the product kernels cut a float row into the same 32-weight slices as a GGUF
 * block row and read it through the format's fragment (`shaders/formats/f32.wgsl`, `f16.wgsl`,
 * `bf16.wgsl`: whole aligned 16-byte loads). The codec is the element conversion itself.
 */
import type { QuantBlock, WeightFormat } from "./format.ts";

/** Elements per float "block": one slice of the product kernels. */
export const FLOAT_BLOCK_ELEMS = 32;

/** A uniform value in [-1, 1) from a u32. */
const unit = (u: number) => (u >>> 0) / 2 ** 31 - 1;

/** A float format of `bytes`-byte elements, read and written by `get` and `set` at a byte offset. */
export function floatFormat(
  block: QuantBlock,
  bytes: number,
  get: (view: DataView, at: number) => number,
  set: (view: DataView, at: number, value: number) => void,
): WeightFormat {
  const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);
  return {
    ...block,
    decode(src, at, out, outAt) {
      const v = view(src);
      for (let i = 0; i < FLOAT_BLOCK_ELEMS; i++) out[outAt + i] = get(v, at + i * bytes);
    },
    encode(values, from, dst, at) {
      const v = view(dst);
      for (let i = 0; i < FLOAT_BLOCK_ELEMS; i++) set(v, at + i * bytes, values[from + i]!);
    },
    randomBlock(out, at, next) {
      const v = view(out);
      for (let i = 0; i < FLOAT_BLOCK_ELEMS; i++) set(v, at + i * bytes, unit(next()));
    },
  };
}
