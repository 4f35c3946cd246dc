/** Field helpers shared by the block format files: f16 scales and random block bytes. */
import { f16ToNumber, numberToF16 } from "../../dtype.ts";

/** The little-endian f16 at byte `at`, as a number. */
export const f16At = (b: Uint8Array, at: number): number => f16ToNumber(b[at]! | (b[at + 1]! << 8));

/** Store `value` as f16 at byte `at`; returns the value the f16 holds. */
export function setF16(b: Uint8Array, at: number, value: number): number {
  const h = numberToF16(value);
  b[at] = h & 0xff;
  b[at + 1] = h >> 8;
  return f16ToNumber(h);
}

/** Bytes [at, at + n) of `b` filled from `next` (uniform u32s, four bytes each). */
export function randomBytes(b: Uint8Array, at: number, n: number, next: () => number): void {
  for (let i = 0; i < n; i += 4) {
    const r = next();
    for (let j = 0; j < 4 && i + j < n; j++) b[at + i + j] = (r >>> (8 * j)) & 0xff;
  }
}

/** A random f16 scale uniform in [−size, size), stored at byte `at`. */
export const randomF16 = (b: Uint8Array, at: number, size: number, next: () => number): number =>
  setF16(b, at, (next() / 2 ** 31 - 1) * size);

/** Round half away from zero (C's `lroundf`). */
export const roundHalfAway = (v: number): number => Math.sign(v) * Math.floor(Math.abs(v) + 0.5);

/** The nearest of −1, 0, 1 to v / d (0 when d is 0). */
export const ternary = (v: number, d: number): number =>
  d > 0 ? Math.max(-1, Math.min(1, roundHalfAway(v / d))) : 0;
