/**
 * What ggml's imatrix i-quants (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, in
 * `formats/`) share: their lookup grids, the sign rule and the grid readers of their CPU decoders.
 *
 * A grid maps an index to 8 (or 4) small values; a block stores one f16 scale, per-32 sub-block
 * scales, grid indices for each run of 8 (or 4) weights, and for most types 7 sign bits per 8
 * weights whose parity gives the eighth (`iqSigns`). The grids are data: `shaders/tables/<name>.json`,
 * read out of ggml by `bench/peers/iq_tables.ts`, entry after entry, 4 byte values (signed for
 * iq1s) to a little-endian u32 word; the decoders get the words as their `table` argument.
 */
import { EngineError } from "../../contract/errors.ts";
import { randomBytes, randomF16, readF16 } from "./block.ts";
import type { QuantBlock, QuantTable, WeightFormat } from "./format.ts";

/** Unsigned byte values: 256 × 8 (two words an entry). */
export const IQ2XXS_GRID: QuantTable = { name: "iq2xxs", words: 512 };
export const IQ2XS_GRID: QuantTable = { name: "iq2xs", words: 1024 };
export const IQ2S_GRID: QuantTable = { name: "iq2s", words: 2048 };
/** Unsigned byte values: 4 (one word) an entry. */
export const IQ3XXS_GRID: QuantTable = { name: "iq3xxs", words: 256 };
export const IQ3S_GRID: QuantTable = { name: "iq3s", words: 512 };
/** Signed bytes in {−1, 0, 1}: 2048 × 8, IQ1_S's and IQ1_M's. */
export const IQ1S_GRID: QuantTable = { name: "iq1s", words: 4096 };

/** The decoder's `table` argument, which the registry passes once the table has loaded. */
export function gridWords(table: QuantTable, words: Uint32Array | undefined): Uint32Array {
  if (words === undefined || words.length !== table.words) {
    throw EngineError.invalidArgument(
      `grid ${table.name}: ${words?.length ?? "no"} words, expected ${table.words}`,
    );
  }
  return words;
}

/**
 * The 8 sign bits (bit j set: weight j negative) of a 7-bit sign code: the eighth bit is the
 * parity of the seven, so every run of 8 has an even number of minus signs.
 */
export function iqSigns(code: number): number {
  let ones = code & 127;
  ones ^= ones >> 4;
  ones ^= ones >> 2;
  ones ^= ones >> 1;
  return (code & 127) | ((ones & 1) << 7);
}

/**
 * out[o + j] = scale · g[j] · (sign bit j of `signs` ? −1 : 1), j < width, for the unsigned byte
 * values g of entry `index` of a grid of `width` (8 or 4) values an entry.
 */
export function putEntry(
  words: Uint32Array,
  width: number,
  index: number,
  scale: number,
  signs: number,
  out: Float64Array,
  o: number,
): void {
  for (let j = 0; j < width; j++) {
    const at = index * width + j;
    const v = scale * ((words[at >> 2]! >>> (8 * (at & 3))) & 0xff);
    out[o + j] = (signs >> j) & 1 ? -v : v;
  }
}

/** IQ1_S and IQ1_M's shift of every grid value: 1/8, its sign stored per 32 or 8 weights. */
export const IQ1_DELTA = 0.125;

/** out[o..o+7] = scale · (g + delta) for the signed byte values g of iq1s entry `index`. */
export function putIq1(
  words: Uint32Array,
  index: number,
  scale: number,
  delta: number,
  out: Float64Array,
  o: number,
): void {
  for (let j = 0; j < 8; j++) {
    const g = (words[2 * index + (j >> 2)]! << (24 - 8 * (j & 3))) >> 24;
    out[o + j] = scale * (g + delta);
  }
}

/** The little-endian u16 at byte `at`. */
export const u16 = (b: Uint8Array, at: number): number => b[at]! | (b[at + 1]! << 8);

/** The little-endian u32 at byte `at`. */
export const u32 = (b: Uint8Array, at: number): number =>
  (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;

/**
 * Decodes sub-block i (32 weights) of the block at `offset` into out[o..o+31], given the block's
 * f16 `d` and the grid words.
 */
export type IquantSubBlock = (
  bytes: Uint8Array,
  offset: number,
  i: number,
  d: number,
  words: Uint32Array,
  out: Float64Array,
  o: number,
) => void;

/**
 * An i-quant of 256-weight blocks with an f16 `d` at byte 0 and 8 sub-blocks of 32 (every one but
 * IQ1_M): its decoder reads `grid` and d, then each sub-block; its random blocks are random bytes
 * after d, and a d for which the largest weight, d · `largest`, is about 1.
 */
export function iquantFormat(
  block: QuantBlock,
  grid: QuantTable,
  largest: number,
  subBlock: IquantSubBlock,
): WeightFormat {
  return {
    ...block,
    decode(bytes, offset, out, outOffset, table) {
      const words = gridWords(grid, table);
      const d = readF16(bytes, offset);
      for (let i = 0; i < 8; i++) subBlock(bytes, offset, i, d, words, out, outOffset + 32 * i);
    },
    randomBlock(out, offset, next) {
      randomBytes(out, offset + 2, block.blockBytes - 2, next);
      randomF16(out, offset, 1 / largest, next);
    },
    table: grid,
  };
}

/** d · (0.5 + s) · `quarterOrHalf`: the sub-block scale of IQ2_XXS, IQ2_XS, IQ2_S (· 1/4) and IQ3_XXS (· 1/2). */
export const iqScale = (d: number, s: number, quarterOrHalf: number): number =>
  d * (0.5 + s) * quarterOrHalf;
