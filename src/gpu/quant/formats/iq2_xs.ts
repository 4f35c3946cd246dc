/**
 * IQ2_XS (ggml type 17): 2.31 bits per weight. Block of 256 weights, 74 bytes: f16 `d` at 0, 32
 * little-endian u16 at 2 (one per 8 weights: a 9-bit iq2xs grid index and a 7-bit sign code,
 * `iqSigns`), 8 scale bytes at 66 (sub-block i of 32 weights: low nibble for its first 16
 * weights, high nibble for the rest). Weight = d · (0.5 + s) / 4 · grid · sign.
 */
import type { QuantBlock, QuantFormat } from "../format.ts";
import { randomBytes, randomF16, readF16 } from "../block.ts";
import { gridWords, IQ2XS_GRID, iqSigns, putEntry, u16 } from "../iquants.ts";

/** IQ2_XS's geometry: all a GGUF header needs (`../blocks.ts`). */
export const IQ2_XS_BLOCK = {
  type: "IQ2_XS",
  ggmlType: 17,
  blockSize: 256,
  blockBytes: 74,
  fragment: "iq2_xs",
} as const satisfies QuantBlock;

export const IQ2_XS: QuantFormat = {
  ...IQ2_XS_BLOCK,
  decode(bytes, offset, out, outOffset, table) {
    const words = gridWords(IQ2XS_GRID, table);
    const d = readF16(bytes, offset);
    for (let i = 0; i < 8; i++) {
      const sc = bytes[offset + 66 + i]!;
      for (let l = 0; l < 4; l++) {
        const db = d * (0.5 + ((sc >> (4 * (l >> 1))) & 15)) * 0.25;
        const q = u16(bytes, offset + 2 + 8 * i + 2 * l);
        putEntry(words, 8, q & 511, db, iqSigns(q >> 9), out, outOffset + 32 * i + 8 * l);
      }
    }
  },
  // Largest weight: d · 15.5 / 4 · 43.
  randomBlock(out, offset, next) {
    randomBytes(out, offset + 2, 72, next);
    randomF16(out, offset, 1 / (3.875 * 43), next);
  },
  table: IQ2XS_GRID,
};
