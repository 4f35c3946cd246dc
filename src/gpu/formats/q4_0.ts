/**
 * Q4_0, 18-byte blocks of 32: f16 `d` at 0, 16 nibble bytes at 2; element i < 16 is the low
 * nibble of byte i, element i + 16 its high nibble; element = d · (nibble − 8).
 * GPU decoder: `shaders/formats/q4_0.wgsl`.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import {
  decodeNibbles,
  largestMagnitude,
  packNibbles,
  randomBytes,
  randomF16,
  readF16,
  roundLevels,
  writeF16,
} from "./block.ts";

/** Q4_0's geometry: all a GGUF header needs (`../blocks.ts`). */
export const Q4_0_BLOCK: QuantBlockOf<"Q4_0"> = quantBlock("Q4_0", 2, 32, 18);

export const Q4_0: WeightFormat = {
  ...Q4_0_BLOCK,
  decode(src, at, out, outAt) {
    const d = readF16(src, at);
    decodeNibbles(src, at + 2, out, outAt, (q) => d * (q - 8)); // −0 where ggml has it
  },
  encode(values, from, dst, at) {
    // The value of largest magnitude maps to level 0 (−8·d), which uses the asymmetric range.
    const d = writeF16(dst, at, largestMagnitude(values, from) / -8);
    const levels = new Uint8Array(32);
    roundLevels(values, from, d, 0, 8, [0, 15], levels, 0);
    packNibbles(levels, dst, at + 2);
  },
  randomBlock(out, at, next) {
    randomBytes(out, at + 2, 16, next);
    randomF16(out, at, 1 / 8, next);
  },
};
