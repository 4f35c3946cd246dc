/**
 * IQ3_S (ggml type 21): 3.44 bits per weight. Block of 256 weights, 110 bytes: f16 `d` at 0, 64
 * low grid-index bytes at 2 (one per 4 weights), 8 `qh` bytes at 66 (sub-block i of 32 weights:
 * bit k is index bit 8 of its run k of 4), 32 sign bytes at 74 (bit j: weight j of 8 negative)
 * and 4 scale bytes at 106 (sub-block i: nibble i & 1 of byte i >> 1). Weight =
 * d · (1 + 2s) · iq3s grid · sign.
 */
import type { QuantBlock, QuantFormat } from "../format.ts";
import { randomBytes, randomF16, readF16 } from "../block.ts";
import { gridWords, IQ3S_GRID, putEntry } from "../iquants.ts";

/** IQ3_S's geometry: all a GGUF header needs (`../blocks.ts`). */
export const IQ3_S_BLOCK = {
  type: "IQ3_S",
  ggmlType: 21,
  blockSize: 256,
  blockBytes: 110,
  fragment: "iq3_s",
} as const satisfies QuantBlock;

export const IQ3_S: QuantFormat = {
  ...IQ3_S_BLOCK,
  decode(bytes, offset, out, outOffset, table) {
    const words = gridWords(IQ3S_GRID, table);
    const d = readF16(bytes, offset);
    for (let i = 0; i < 8; i++) {
      const db = d * (1 + 2 * ((bytes[offset + 106 + (i >> 1)]! >> (4 * (i & 1))) & 15));
      const qh = bytes[offset + 66 + i]!;
      for (let k = 0; k < 8; k++) {
        const index = bytes[offset + 2 + 8 * i + k]! | (((qh >> k) & 1) << 8);
        const signs = bytes[offset + 74 + 4 * i + (k >> 1)]! >> (4 * (k & 1));
        putEntry(words, 4, index, db, signs, out, outOffset + 32 * i + 4 * k);
      }
    }
  },
  // Largest weight: d · 31 · 15.
  randomBlock(out, offset, next) {
    randomBytes(out, offset + 2, 108, next);
    randomF16(out, offset, 1 / (31 * 15), next);
  },
  table: IQ3S_GRID,
};
