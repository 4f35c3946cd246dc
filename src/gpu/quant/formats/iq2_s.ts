/**
 * IQ2_S (ggml type 22): 2.56 bits per weight. Block of 256 weights, 82 bytes: f16 `d` at 0, 32
 * low grid-index bytes at 2 (one per 8 weights), 32 sign bytes at 34 (bit j: weight j of those 8
 * negative), 8 `qh` bytes at 66 (sub-block i: bits 2l, 2l+1 are index bits 8, 9 of its run l)
 * and 8 scale bytes at 74 (low nibble for the first 16 weights of sub-block i, high for the
 * rest). Weight = d · (0.5 + s) / 4 · iq2s grid · sign.
 */
import type { QuantBlock, QuantFormat } from "../format.ts";
import { randomBytes, randomF16, readF16 } from "../block.ts";
import { gridWords, IQ2S_GRID, putEntry } from "../iquants.ts";

/** IQ2_S's geometry: all a GGUF header needs (`../blocks.ts`). */
export const IQ2_S_BLOCK = {
  type: "IQ2_S",
  ggmlType: 22,
  blockSize: 256,
  blockBytes: 82,
  fragment: "iq2_s",
} as const satisfies QuantBlock;

export const IQ2_S: QuantFormat = {
  ...IQ2_S_BLOCK,
  decode(bytes, offset, out, outOffset, table) {
    const words = gridWords(IQ2S_GRID, table);
    const d = readF16(bytes, offset);
    for (let i = 0; i < 8; i++) {
      const sc = bytes[offset + 74 + i]!;
      const qh = bytes[offset + 66 + i]!;
      for (let l = 0; l < 4; l++) {
        const db = d * (0.5 + ((sc >> (4 * (l >> 1))) & 15)) * 0.25;
        const index = bytes[offset + 2 + 4 * i + l]! | (((qh >> (2 * l)) & 3) << 8);
        const signs = bytes[offset + 34 + 4 * i + l]!;
        putEntry(words, 8, index, db, signs, out, outOffset + 32 * i + 8 * l);
      }
    }
  },
  // Largest weight: d · 15.5 / 4 · 43.
  randomBlock(out, offset, next) {
    randomBytes(out, offset + 2, 80, next);
    randomF16(out, offset, 1 / (3.875 * 43), next);
  },
  table: IQ2S_GRID,
};
