/**
 * IQ4_NL (ggml type 20): 18-byte blocks of 32 weights, Q4_0's layout with non-linear levels.
 * f16 `d` at byte 0, 16 nibble bytes at 2 (element i < 16 the low nibble of byte i, element
 * i + 16 its high nibble). Element = d · level[nibble]. The 16 int8 levels are read back from
 * ggml by `bench/peers/iq4_nl_values.ts` into the table `shaders/tables/iq4nl.json` (four to a
 * word), which the decoders (CPU and GPU) read, and into `../iq4_nl_values.ts` for the encoder.
 */
import { EngineError } from "../../contract/errors.ts";
import { quantBlock, type QuantBlockOf, type QuantTable, type WeightFormat } from "./format.ts";
import { decodeNibbles, randomBytes, randomF16, readF16, writeF16 } from "./block.ts";
import { IQ4_NL_VALUES } from "./iq4_nl_values.ts";

/** The levels of the last table unpacked (decode runs once per block). */
let unpacked: { table: Uint32Array; levels: number[] } | undefined;

/** The 16 levels of `table` (IQ4_NL_TABLE's words: level q is the int8 at byte q of them). */
export function nonLinearLevels(table: Uint32Array | undefined): readonly number[] {
  if (table?.length !== 4) {
    throw EngineError.invalidArgument(`IQ4 decode needs the ${IQ4_NL_TABLE.name} table's 4 words`);
  }
  if (unpacked?.table !== table) {
    const levels = Array.from(
      { length: 16 },
      (_, q) => (table[q >> 2]! << (24 - 8 * (q & 3))) >> 24,
    );
    unpacked = { table, levels };
  }
  return unpacked.levels;
}

/** The 16 nibble bytes at `at` as `d` times their `levels`, in ggml's 4-bit order, at `o`. */
export function decodeNonLinear(
  src: Uint8Array,
  at: number,
  d: number,
  levels: readonly number[],
  out: Float64Array,
  o: number,
): void {
  decodeNibbles(src, at, out, o, (q) => d * levels[q]!);
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

/** IQ4_NL's geometry: all a GGUF header needs (`../blocks.ts`). */
export const IQ4_NL_BLOCK: QuantBlockOf<"IQ4_NL"> = quantBlock("IQ4_NL", 20, 32, 18);

export const IQ4_NL: WeightFormat = {
  ...IQ4_NL_BLOCK,
  decode(bytes, offset, out, outOffset, table) {
    const levels = nonLinearLevels(table);
    decodeNonLinear(bytes, offset + 2, readF16(bytes, offset), levels, out, outOffset);
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
