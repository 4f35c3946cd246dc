/**
 * IQ4_NL (ggml type 20): 18-byte blocks of 32 weights, Q4_0's layout with non-linear levels.
 * f16 `d` at byte 0, 16 nibble bytes at 2 (element i < 16 the low nibble of byte i, element
 * i + 16 its high nibble). Element = d · IQ4_NL_VALUES[nibble] (`iq4_nl_values.ts`, read back
 * from ggml).
 */
import type { QuantFormat, QuantTable } from "../format.ts";
import { decodeNibbles, randomBytes, randomF16, readF16, writeF16 } from "../block.ts";
import { IQ4_NL_VALUES } from "../iq4_nl_values.ts";

/** The 16 nibble bytes at `at` scaled by `d`, in ggml's 4-bit order, as 32 elements at `o`. */
export function decodeNonLinear(
  src: Uint8Array,
  at: number,
  d: number,
  out: Float64Array,
  o: number,
): void {
  decodeNibbles(src, at, out, o, (q) => d * IQ4_NL_VALUES[q]!);
}

/** The index of the level nearest `v` (levels increase; ties to the lower). */
export function nearestLevel(v: number): number {
  let i = 0;
  while (i < 15 && Math.abs(IQ4_NL_VALUES[i + 1]! - v) < Math.abs(IQ4_NL_VALUES[i]! - v)) i++;
  return i;
}

/**
 * Round-to-nearest: the 32 elements at `from` as nibbles at `at` for the scale `d` (0: every
 * element the level nearest 0).
 */
export function encodeNonLinear(
  values: ArrayLike<number>,
  from: number,
  d: number,
  dst: Uint8Array,
  at: number,
): void {
  const inv = d === 0 ? 0 : 1 / d;
  for (let i = 0; i < 16; i++) {
    const lo = nearestLevel(values[from + i]! * inv),
      hi = nearestLevel(values[from + 16 + i]! * inv);
    dst[at + i] = lo | (hi << 4);
  }
}

/** The element of largest magnitude of the `n` at `from` (the first of equals), with its sign. */
export function signedMax(values: ArrayLike<number>, from: number, n: number): number {
  let max = 0;
  for (let i = 0; i < n; i++) {
    const v = values[from + i]!;
    if (Math.abs(v) > Math.abs(max)) max = v;
  }
  return max;
}

/**
 * The levels as int8 bytes, four to a word (`shaders/tables/iq4nl.json`, written with
 * `../iq4_nl_values.ts` by `bench/peers/iq4_nl_values.ts`): what the IQ4 fragments bind.
 */
export const IQ4_NL_TABLE: QuantTable = { name: "iq4nl", words: 4 };

export const IQ4_NL: QuantFormat = {
  type: "IQ4_NL",
  ggmlType: 20,
  blockSize: 32,
  blockBytes: 18,
  fragment: "iq4_nl",
  decode(bytes, offset, out, outOffset) {
    decodeNonLinear(bytes, offset + 2, readF16(bytes, offset), out, outOffset);
  },
  encode(values, offset, out, outOffset) {
    // The element of largest magnitude lands on level 0 (−127·d), the widest end.
    const d = writeF16(out, outOffset, signedMax(values, offset, 32) / IQ4_NL_VALUES[0]!);
    encodeNonLinear(values, offset, d, out, outOffset + 2);
  },
  randomBlock(out, offset, next) {
    randomBytes(out, offset + 2, 16, next);
    randomF16(out, offset, 1 / 127, next);
  },
  table: IQ4_NL_TABLE,
};
