/**
 * Q4_1, 20-byte blocks of 32: f16 `d` at 0, f16 `m` at 2, 16 nibble bytes at 4 in Q4_0's order;
 * element = d · nibble + m. GPU decoder: `shaders/quant/q4_1.wgsl`.
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

/** Q4_1's geometry: all a GGUF header needs (`../blocks.ts`). */
export const Q4_1_BLOCK = {
  type: "Q4_1",
  ggmlType: 3,
  blockSize: 32,
  blockBytes: 20,
  fragment: "q4_1",
} as const satisfies QuantBlock;

export const Q4_1: QuantFormat = {
  ...Q4_1_BLOCK,
  decode(src, at, out, outAt) {
    const d = readF16(src, at), m = readF16(src, at + 2);
    decodeNibbles(src, at + 4, out, outAt, (q) => d * q + m);
  },
  encode(values, from, dst, at) {
    let lo = Infinity, hi = -Infinity;
    for (let i = 0; i < 32; i++) {
      lo = Math.min(lo, values[from + i]!);
      hi = Math.max(hi, values[from + i]!);
    }
    const d = writeF16(dst, at, (hi - lo) / 15);
    const m = writeF16(dst, at + 2, lo);
    const inv = d === 0 ? 0 : 1 / d;
    const levels = new Uint8Array(32);
    for (let i = 0; i < 32; i++) {
      levels[i] = clamp(roundHalfAway((values[from + i]! - m) * inv), 0, 15);
    }
    packNibbles(levels, dst, at + 4);
  },
  randomBlock(out, at, next) {
    randomBytes(out, at + 4, 16, next);
    randomF16(out, at, 1 / 15, next);
    randomF16(out, at + 2, 0.5, next);
  },
};
