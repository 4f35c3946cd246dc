/**
 * IQ3_S (ggml type 21): 3.44 bits per weight. Block of 256 weights, 110 bytes: f16 `d` at 0, 64
 * low grid-index bytes at 2 (one per 4 weights), 8 `qh` bytes at 66 (sub-block i of 32 weights:
 * bit k is index bit 8 of its run k of 4), 32 sign bytes at 74 (bit j: weight j of 8 negative)
 * and 4 scale bytes at 106 (sub-block i: nibble i & 1 of byte i >> 1). Weight =
 * d · (1 + 2s) · iq3s grid · sign.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { IQ3S_GRID, iquantFormat, type IquantSubBlock, putEntry } from "./iquants.ts";

/** Sub-block i of the block at `at` into out[o..o+31]. */
const subBlock: IquantSubBlock = (b, at, i, d, words, out, o) => {
  const db = d * (1 + 2 * ((b[at + 106 + (i >> 1)]! >> (4 * (i & 1))) & 15));
  const qh = b[at + 66 + i]!;
  for (let k = 0; k < 8; k++) {
    const index = b[at + 2 + 8 * i + k]! | (((qh >> k) & 1) << 8);
    const signs = b[at + 74 + 4 * i + (k >> 1)]! >> (4 * (k & 1));
    putEntry(words, 4, index, db, signs, out, o + 4 * k);
  }
};

/** IQ3_S's geometry: all a GGUF header needs (`../blocks.ts`). */
export const IQ3_S_BLOCK: QuantBlockOf<"IQ3_S"> = quantBlock("IQ3_S", 21, 256, 110);

// Largest weight: d · 31 · 15.
export const IQ3_S: WeightFormat = iquantFormat(IQ3_S_BLOCK, IQ3S_GRID, 31 * 15, subBlock);
