/**
 * IQ2_XS (ggml type 17): 2.31 bits per weight. Block of 256 weights, 74 bytes: f16 `d` at 0, 32
 * little-endian u16 at 2 (one per 8 weights: a 9-bit iq2xs grid index and a 7-bit sign code,
 * `iqSigns`), 8 scale bytes at 66 (sub-block i of 32 weights: low nibble for its first 16
 * weights, high nibble for the rest). Weight = d · (0.5 + s) / 4 · grid · sign.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import {
  IQ2XS_GRID,
  iqScale,
  iqSigns,
  iquantFormat,
  type IquantSubBlock,
  putEntry,
  u16,
} from "./iquants.ts";

/** Sub-block i of the block at `at` into out[o..o+31]. */
const subBlock: IquantSubBlock = (b, at, i, d, words, out, o) => {
  const sc = b[at + 66 + i]!;
  for (let l = 0; l < 4; l++) {
    const db = iqScale(d, (sc >> (4 * (l >> 1))) & 15, 0.25);
    const q = u16(b, at + 2 + 8 * i + 2 * l);
    putEntry(words, 8, q & 511, db, iqSigns(q >> 9), out, o + 8 * l);
  }
};

/** IQ2_XS's geometry: all a GGUF header needs (`../blocks.ts`). */
export const IQ2_XS_BLOCK: QuantBlockOf<"IQ2_XS"> = quantBlock("IQ2_XS", 17, 256, 74);

// Largest weight: d · 15.5 / 4 · 43.
export const IQ2_XS: WeightFormat = iquantFormat(IQ2_XS_BLOCK, IQ2XS_GRID, 3.875 * 43, subBlock);
