/**
 * IQ2_S (ggml type 22): 2.56 bits per weight. Block of 256 weights, 82 bytes: f16 `d` at 0, 32
 * low grid-index bytes at 2 (one per 8 weights), 32 sign bytes at 34 (bit j: weight j of those 8
 * negative), 8 `qh` bytes at 66 (sub-block i: bits 2l, 2l+1 are index bits 8, 9 of its run l)
 * and 8 scale bytes at 74 (low nibble for the first 16 weights of sub-block i, high for the
 * rest). Weight = d · (0.5 + s) / 4 · iq2s grid · sign.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { IQ2S_GRID, iqScale, iquantFormat, type IquantSubBlock, putEntry } from "./iquants.ts";

/** Sub-block i of the block at `at` into out[o..o+31]. */
const subBlock: IquantSubBlock = (b, at, i, d, words, out, o) => {
  const sc = b[at + 74 + i]!;
  const qh = b[at + 66 + i]!;
  for (let l = 0; l < 4; l++) {
    const db = iqScale(d, (sc >> (4 * (l >> 1))) & 15, 0.25);
    const index = b[at + 2 + 4 * i + l]! | (((qh >> (2 * l)) & 3) << 8);
    const signs = b[at + 34 + 4 * i + l]!;
    putEntry(words, 8, index, db, signs, out, o + 8 * l);
  }
};

/** IQ2_S's geometry: all a GGUF header needs (`../blocks.ts`). */
export const IQ2_S_BLOCK: QuantBlockOf<"IQ2_S"> = quantBlock("IQ2_S", 22, 256, 82);

// Largest weight: d · 15.5 / 4 · 43.
export const IQ2_S: WeightFormat = iquantFormat(IQ2_S_BLOCK, IQ2S_GRID, 3.875 * 43, subBlock);
