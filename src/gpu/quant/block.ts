/** Byte-level pieces shared by the block codecs in `formats/`. */
import { f16ToNumber, numberToF16 } from "../dtype.ts";

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

/** Fill `out[offset..offset+count)` with random bytes. */
export function randomBytes(
  out: Uint8Array,
  offset: number,
  count: number,
  next: () => number,
): void {
  for (let i = 0; i < count; i += 4) {
    const r = next();
    for (let j = 0; j < 4 && i + j < count; j++) out[offset + i + j] = (r >>> (8 * j)) & 0xff;
  }
}

/** Write a random f16 uniform in (−size, size) at byte `at`. */
export function randomF16(out: Uint8Array, at: number, size: number, next: () => number): void {
  writeF16(out, at, (next() / 2 ** 31 - 1) * size);
}

/**
 * Decode the 16 nibble bytes at `at` in ggml's 4-bit order (element i < 16 the low nibble of
 * byte i, element i + 16 its high nibble), each nibble q as `value(q)`.
 */
export function decodeNibbles(
  src: Uint8Array,
  at: number,
  out: Float64Array,
  o: number,
  value: (q: number) => number,
): void {
  for (let i = 0; i < 16; i++) {
    const byte = src[at + i]!;
    out[o + i] = value(byte & 15);
    out[o + 16 + i] = value(byte >> 4);
  }
}

/** Pack 32 levels (0..15) in ggml's 4-bit order at `at`. */
export function packNibbles(levels: ArrayLike<number>, dst: Uint8Array, at: number): void {
  for (let i = 0; i < 16; i++) dst[at + i] = levels[i]! | (levels[16 + i]! << 4);
}
