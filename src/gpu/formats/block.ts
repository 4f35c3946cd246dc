/** Byte-level pieces shared by the block codecs in `formats/`. */
import { f16ToNumber, numberToF16 } from "./halves.ts";

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

/** The value of largest magnitude among the `n` at `from` (the first of equal magnitudes). */
export function largestMagnitude(values: ArrayLike<number>, from: number, n = 32): number {
  let max = 0;
  for (let i = 0; i < n; i++) {
    const v = values[from + i]!;
    if (Math.abs(v) > Math.abs(max)) max = v;
  }
  return max;
}

/** The least and greatest of the 32 values at `from`. */
export function valueRange(values: ArrayLike<number>, from: number): [number, number] {
  let lo = Infinity, hi = -Infinity;
  for (let i = 0; i < 32; i++) {
    lo = Math.min(lo, values[from + i]!);
    hi = Math.max(hi, values[from + i]!);
  }
  return [lo, hi];
}

/**
 * out[at + i] = clamp(roundHalfAway((values[from + i] − zero) / d) + bias, lo, hi) for the 32
 * values of a block with scale d (as × 1/d, and × 0 when d is 0): the rounding of Q8_0, Q4_0,
 * Q4_1, Q5_0 and Q5_1. A negative level is stored as its two's-complement byte.
 */
export function roundLevels(
  values: ArrayLike<number>,
  from: number,
  d: number,
  zero: number,
  bias: number,
  [lo, hi]: [number, number],
  out: Uint8Array,
  at: number,
): void {
  const inv = d === 0 ? 0 : 1 / d;
  for (let i = 0; i < 32; i++) {
    out[at + i] = clamp(roundHalfAway((values[from + i]! - zero) * inv) + bias, lo, hi);
  }
}
