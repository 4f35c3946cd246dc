/**
 * Q4_1, 20-byte blocks of 32: f16 `d` at 0, f16 `m` at 2, 16 nibble bytes at 4 in Q4_0's order;
 * element = d · nibble + m. GPU decoder: `shaders/formats/q4_1.wgsl`.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import {
  decodeNibbles,
  packNibbles,
  randomBytes,
  randomF16,
  readF16,
  roundLevels,
  valueRange,
  writeF16,
} from "./block.ts";

/** Q4_1's geometry: all a GGUF header needs (`../blocks.ts`). */
export const Q4_1_BLOCK: QuantBlockOf<"Q4_1"> = quantBlock("Q4_1", 3, 32, 20);

export const Q4_1: WeightFormat = {
  ...Q4_1_BLOCK,
  decode(src, at, out, outAt) {
    const d = readF16(src, at), m = readF16(src, at + 2);
    decodeNibbles(src, at + 4, out, outAt, (q) => d * q + m);
  },
  encode(values, from, dst, at) {
    const [lo, hi] = valueRange(values, from);
    const d = writeF16(dst, at, (hi - lo) / 15);
    const m = writeF16(dst, at + 2, lo);
    const levels = new Uint8Array(32);
    roundLevels(values, from, d, m, 0, [0, 15], levels, 0);
    packNibbles(levels, dst, at + 4);
  },
  randomBlock(out, at, next) {
    randomBytes(out, at + 4, 16, next);
    randomF16(out, at, 1 / 15, next);
    randomF16(out, at + 2, 0.5, next);
  },
};
