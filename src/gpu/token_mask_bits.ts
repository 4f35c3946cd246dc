/**
 * Guided decoding's token bitmask, plainly: one bit per vocabulary entry in u32 words
 * (`ceil(vocab / 32)` per row, bit `i % 32` of word `i / 32` set when token `i` is allowed, a row
 * of all ones leaves the sequence free), and what applying it to a row of logits gives.
 */

/** The logit a forbidden token gets: the lowest f32, the GPU sampler's -inf. */
export const MASKED_LOGIT: number = -3.4028234663852886e38;

/** u32 words of one row of the bitmask over `vocab` tokens. */
export function maskWords(vocab: number): number {
  return Math.ceil(vocab / 32);
}

/** A row allowing exactly `allowed` (ids at or past `vocab` are ignored). */
export function tokenBitmask(vocab: number, allowed: Iterable<number>): Uint32Array {
  const mask = new Uint32Array(maskWords(vocab));
  for (const t of allowed) {
    if (Number.isInteger(t) && t >= 0 && t < vocab) mask[t >>> 5]! |= 1 << (t & 31);
  }
  return mask;
}

/** A row of all ones: every token allowed (bits past `vocab` set too). */
export function freeMask(vocab: number): Uint32Array {
  return new Uint32Array(maskWords(vocab)).fill(0xffffffff);
}

/** Whether `mask` allows token `i`. */
export function allows(mask: Uint32Array, i: number): boolean {
  return ((mask[i >>> 5]! >>> (i & 31)) & 1) !== 0;
}

/** Whether `mask` allows no token below `vocab`. */
export function allowsNone(mask: Uint32Array, vocab: number): boolean {
  for (let i = 0; i < vocab; i++) if (allows(mask, i)) return false;
  return true;
}

/** `logits` (one row) with every token `mask` forbids set to {@linkcode MASKED_LOGIT}. */
export function applyTokenMask(logits: ArrayLike<number>, mask: Uint32Array): Float64Array {
  return Float64Array.from(logits, (v, i) => (allows(mask, i) ? v : MASKED_LOGIT));
}
