/**
 * The 32-element ggml block formats Q8_0, Q4_0 and Q4_1: decode one block to float64 and encode
 * one block by round-to-nearest. Layouts (bytes, little-endian), as ggml lays them out:
 *
 * - Q8_0, 34 bytes: f16 `d` at 0, 32 × int8 `q` at 2; element i = d · q[i].
 * - Q4_0, 18 bytes: f16 `d` at 0, 16 bytes at 2; element i < 16 is the low nibble of byte i,
 *   element i + 16 its high nibble; element = d · (nibble − 8).
 * - Q4_1, 20 bytes: f16 `d` at 0, f16 `m` at 2, 16 bytes at 4 in Q4_0's nibble order;
 *   element = d · nibble + m.
 */
import { f16ToNumber, numberToF16 } from "../dtype.ts";

/** A block codec: `decode` writes the block's elements, `encode` writes the block's bytes. */
export interface BlockCodec {
  decode(src: Uint8Array, at: number, out: Float64Array, outAt: number): void;
  encode(values: ArrayLike<number>, from: number, dst: Uint8Array, at: number): void;
}

/** The f16 at byte `at` as a number. */
export const readF16 = (b: Uint8Array, at: number): number =>
  f16ToNumber(b[at]! | (b[at + 1]! << 8));

/** Store `value` as f16 at byte `at`; returns the value the f16 holds. */
export function writeF16(b: Uint8Array, at: number, value: number): number {
  const h = numberToF16(value);
  b[at] = h & 0xff;
  b[at + 1] = h >> 8;
  return f16ToNumber(h);
}

/** Round half away from zero (C's `roundf`). */
export const roundHalfAway = (v: number): number => Math.sign(v) * Math.floor(Math.abs(v) + 0.5);

export const clamp = (v: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, v));

export const Q8_0: BlockCodec = {
  decode(src, at, out, outAt) {
    const d = readF16(src, at);
    for (let i = 0; i < 32; i++) out[outAt + i] = d * ((src[at + 2 + i]! << 24) >> 24);
  },
  encode(values, from, dst, at) {
    let amax = 0;
    for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(values[from + i]!));
    const d = writeF16(dst, at, amax / 127);
    const inv = d === 0 ? 0 : 1 / d;
    for (let i = 0; i < 32; i++) {
      dst[at + 2 + i] = clamp(roundHalfAway(values[from + i]! * inv), -127, 127) & 0xff;
    }
  },
};

/** Decode the 16 nibble bytes at `at` as ggml's 4-bit order: low nibbles first, then high. */
function nibbles(
  src: Uint8Array,
  at: number,
  scale: number,
  offset: number,
  out: Float64Array,
  o: number,
) {
  for (let i = 0; i < 16; i++) {
    const byte = src[at + i]!;
    out[o + i] = scale * (byte & 15) + offset;
    out[o + 16 + i] = scale * (byte >> 4) + offset;
  }
}

/** Pack 32 levels (0..15) in ggml's 4-bit order at `at`. */
function packNibbles(levels: ArrayLike<number>, dst: Uint8Array, at: number): void {
  for (let i = 0; i < 16; i++) dst[at + i] = levels[i]! | (levels[16 + i]! << 4);
}

export const Q4_0: BlockCodec = {
  decode(src, at, out, outAt) {
    const d = readF16(src, at);
    nibbles(src, at + 2, d, -8 * d, out, outAt);
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
};

export const Q4_1: BlockCodec = {
  decode(src, at, out, outAt) {
    nibbles(src, at + 4, readF16(src, at), readF16(src, at + 2), out, outAt);
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
};
