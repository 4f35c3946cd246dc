/**
 * Sets of code points as sorted, disjoint, non-adjacent inclusive ranges (`CodeRange`s from
 * `ebnf.ts`): the alphabet of the pattern compiler. The classes ECMA-262 gives names to (`.`,
 * `\d`, `\w`, `\s` and their complements) are here, read with the `u` flag (code points, no
 * case folding, no `s` flag).
 */
import type { CodeRange } from "./ebnf.ts";

/** A set of code points: sorted, disjoint, non-adjacent ranges. */
export type CharSet = readonly CodeRange[];

/** The largest code point. */
export const MAX_CP = 0x10ffff;

/** Every code point. */
export const ANY: CharSet = [[0, MAX_CP]];

/** The surrogates, which a string of Unicode scalar values (valid UTF-8) never holds. */
export const SURROGATES: CharSet = [[0xd800, 0xdfff]];

/** Every Unicode scalar value: what a model's UTF-8 output can hold. */
export const SCALARS: CharSet = [[0, 0xd7ff], [0xe000, MAX_CP]];

/** `\d`. */
export const DIGIT: CharSet = [[0x30, 0x39]];

/** `\w` (no `i` flag, so no case folding). */
export const WORD: CharSet = [[0x30, 0x39], [0x41, 0x5a], [0x5f, 0x5f], [0x61, 0x7a]];

/** `\s`: ECMA-262's WhiteSpace and LineTerminator. */
export const SPACE: CharSet = normalize([
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
]);

/** ECMA-262's line terminators, which `.` does not match without the `s` flag. */
export const LINE_TERMINATORS: CharSet = [[0x0a, 0x0a], [0x0d, 0x0d], [0x2028, 0x2029]];

/** `.` without the `s` flag. */
export const DOT: CharSet = complement(LINE_TERMINATORS);

/** The set of one code point. */
export function single(cp: number): CharSet {
  return [[cp, cp]];
}

/** Ranges in any order, overlapping or adjacent, as a `CharSet`. */
export function normalize(ranges: readonly CodeRange[]): CharSet {
  const sorted = [...ranges].filter(([lo, hi]) => lo <= hi).sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const [lo, hi] of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

/** `a ∪ b`. */
export function union(a: CharSet, b: CharSet): CharSet {
  return normalize([...a, ...b]);
}

/** The code points not in `a`. */
export function complement(a: CharSet): CharSet {
  const out: CodeRange[] = [];
  let next = 0;
  for (const [lo, hi] of a) {
    if (lo > next) out.push([next, lo - 1]);
    next = hi + 1;
  }
  if (next <= MAX_CP) out.push([next, MAX_CP]);
  return out;
}

/** `a ∩ b`. */
export function intersect(a: CharSet, b: CharSet): CharSet {
  const out: CodeRange[] = [];
  let i = 0, j = 0;
  while (i < a.length && j < b.length) {
    const [alo, ahi] = a[i]!, [blo, bhi] = b[j]!;
    const lo = Math.max(alo, blo), hi = Math.min(ahi, bhi);
    if (lo <= hi) out.push([lo, hi]);
    if (ahi < bhi) i++;
    else j++;
  }
  return out;
}

/** `a − b`. */
export function subtract(a: CharSet, b: CharSet): CharSet {
  return intersect(a, complement(b));
}

/** Whether `a` holds no code point. */
export function isEmpty(a: CharSet): boolean {
  return a.length === 0;
}

/** Whether `cp` is in `a` (binary search). */
export function has(a: CharSet, cp: number): boolean {
  let lo = 0, hi = a.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const [l, h] = a[mid]!;
    if (cp < l) hi = mid - 1;
    else if (cp > h) lo = mid + 1;
    else return true;
  }
  return false;
}

/** How many code points `a` holds. */
export function size(a: CharSet): number {
  return a.reduce((n, [lo, hi]) => n + hi - lo + 1, 0);
}

/** A key that is equal for equal sets (for maps). */
export function setKey(a: CharSet): string {
  return a.map(([lo, hi]) => lo === hi ? `${lo}` : `${lo}-${hi}`).join(",");
}
