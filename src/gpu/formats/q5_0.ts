/**
 * Q5_0 (ggml type 6): 22-byte blocks of 32 weights. f16 `d` at byte 0, the 32 fifth bits `qh` at
 * 2 (a little-endian u32: bit i belongs to element i), 16 nibble bytes at 6 in Q4_0's order
 * (element i < 16 the low nibble of byte i, element i + 16 its high nibble).
 * Element i = d · (q − 16), q = nibble | (bit i of qh) << 4.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import {
  largestMagnitude,
  randomBytes,
  randomF16,
  readF16,
  roundLevels,
  writeF16,
} from "./block.ts";

/** The 32 five-bit levels (0..31) of the `qh` word at `qh` and the 16 nibble bytes at `qs`. */
export function fiveBitLevels(src: Uint8Array, qh: number, qs: number, out: Uint8Array): void {
  const high = (src[qh]! | (src[qh + 1]! << 8) | (src[qh + 2]! << 16) | (src[qh + 3]! << 24)) >>> 0;
  for (let i = 0; i < 16; i++) {
    out[i] = (src[qs + i]! & 15) | (((high >>> i) & 1) << 4);
    out[i + 16] = (src[qs + i]! >> 4) | (((high >>> (i + 16)) & 1) << 4);
  }
}

/** Pack 32 five-bit levels as `qh` at `qh` and nibbles at `qs`. */
export function packFiveBit(
  levels: ArrayLike<number>,
  dst: Uint8Array,
  qh: number,
  qs: number,
): void {
  let high = 0;
  for (let i = 0; i < 32; i++) high |= (levels[i]! >> 4) << i;
  for (let j = 0; j < 4; j++) dst[qh + j] = (high >>> (8 * j)) & 0xff;
  for (let i = 0; i < 16; i++) dst[qs + i] = (levels[i]! & 15) | ((levels[i + 16]! & 15) << 4);
}

const levels = new Uint8Array(32);

/** Q5_0's geometry: all a GGUF header needs (`../blocks.ts`). */
export const Q5_0_BLOCK: QuantBlockOf<"Q5_0"> = quantBlock("Q5_0", 6, 32, 22);

export const Q5_0: WeightFormat = {
  ...Q5_0_BLOCK,
  decode(bytes, offset, out, outOffset) {
    const d = readF16(bytes, offset);
    fiveBitLevels(bytes, offset + 2, offset + 6, levels);
    for (let i = 0; i < 32; i++) out[outOffset + i] = d * (levels[i]! - 16);
  },
  encode(values, offset, out, outOffset) {
    // The value of largest magnitude maps to level 0 (−16·d), the end with the extra step.
    const d = writeF16(out, outOffset, largestMagnitude(values, offset) / -16);
    roundLevels(values, offset, d, 0, 16, [0, 31], levels, 0);
    packFiveBit(levels, out, outOffset + 2, outOffset + 6);
  },
  randomBlock(out, offset, next) {
    randomBytes(out, offset + 2, 20, next);
    randomF16(out, offset, 1 / 16, next);
  },
};
