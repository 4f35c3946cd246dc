/**
 * Q5_1 (ggml type 7): 24-byte blocks of 32 weights. f16 `d` at byte 0, f16 `m` at 2, the fifth
 * bits `qh` at 4 and 16 nibble bytes at 8, both as in Q5_0. Element i = d · q + m, q the 5-bit
 * level of element i (0..31).
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { randomBytes, randomF16, readF16, roundLevels, valueRange, writeF16 } from "./block.ts";
import { fiveBitLevels, packFiveBit } from "./q5_0.ts";

const levels = new Uint8Array(32);

/** Q5_1's geometry: all a GGUF header needs (`../blocks.ts`). */
export const Q5_1_BLOCK: QuantBlockOf<"Q5_1"> = quantBlock("Q5_1", 7, 32, 24);

export const Q5_1: WeightFormat = {
  ...Q5_1_BLOCK,
  decode(bytes, offset, out, outOffset) {
    const d = readF16(bytes, offset), m = readF16(bytes, offset + 2);
    fiveBitLevels(bytes, offset + 4, offset + 8, levels);
    for (let i = 0; i < 32; i++) out[outOffset + i] = d * levels[i]! + m;
  },
  encode(values, offset, out, outOffset) {
    const [lo, hi] = valueRange(values, offset);
    const d = writeF16(out, outOffset, (hi - lo) / 31);
    const m = writeF16(out, outOffset + 2, lo);
    roundLevels(values, offset, d, m, 0, [0, 31], levels, 0);
    packFiveBit(levels, out, outOffset + 4, outOffset + 8);
  },
  randomBlock(out, offset, next) {
    randomBytes(out, offset + 4, 20, next);
    randomF16(out, offset, 1 / 62, next); // |d·q + m| ≤ 31/62 + 0.5
    randomF16(out, offset + 2, 0.5, next);
  },
};
