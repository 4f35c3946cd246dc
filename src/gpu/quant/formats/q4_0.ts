/**
 * Q4_0, 18-byte blocks of 32: f16 `d` at 0, 16 nibble bytes at 2; element i < 16 is the low
 * nibble of byte i, element i + 16 its high nibble; element = d · (nibble − 8).
 * GPU decoder: `shaders/quant/q4_0.wgsl`.
 */
import type { QuantBlock, QuantFormat } from "../format.ts";
import {
  clamp,
  decodeNibbles,
  packNibbles,
  randomBytes,
  randomF16,
  readF16,
  roundHalfAway,
  writeF16,
} from "../block.ts";

/** Q4_0's geometry: all a GGUF header needs (`../blocks.ts`). */
export const Q4_0_BLOCK = {
  type: "Q4_0",
  ggmlType: 2,
  blockSize: 32,
  blockBytes: 18,
  fragment: "q4_0",
} as const satisfies QuantBlock;

export const Q4_0: QuantFormat = {
  ...Q4_0_BLOCK,
  decode(src, at, out, outAt) {
    const d = readF16(src, at);
    decodeNibbles(src, at + 2, out, outAt, (q) => d * (q - 8)); // −0 where ggml has it
  },
  encode(values, from, dst, at) {
    // The value of largest magnitude maps to level 0 (−8·d), which uses the asymmetric range.
    let max = 0;
    for (let i = 0; i < 32; i++) {
      const v = values[from + i]!;
      if (Math.abs(v) > Math.abs(max)) max = v;
    }
    const d = writeF16(dst, at, max / -8);
    const inv = d === 0 ? 0 : 1 / d;
    const levels = new Uint8Array(32);
    for (let i = 0; i < 32; i++) {
      levels[i] = clamp(roundHalfAway(values[from + i]! * inv) + 8, 0, 15);
    }
    packNibbles(levels, dst, at + 2);
  },
  randomBlock(out, at, next) {
    randomBytes(out, at + 2, 16, next);
    randomF16(out, at, 1 / 8, next);
  },
};
