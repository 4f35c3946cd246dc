/**
 * IQ3_XXS (ggml type 18): 3.06 bits per weight. Block of 256 weights, 98 bytes: f16 `d` at 0, 64
 * iq3xxs grid-index bytes at 2 (one per 4 weights, 4 values each), then per 32 weights
 * (sub-block i) a little-endian u32 at 66 + 4i: bits 7l..7l+6 are the sign code (`iqSigns`) of
 * weights 8l..8l+7, bits 28..31 the scale s. Weight = d · (0.5 + s) / 2 · grid · sign.
 */
import type { QuantBlock, QuantFormat } from "../format.ts";
import { randomBytes, randomF16, readF16 } from "../block.ts";
import { gridWords, IQ3XXS_GRID, iqSigns, putEntry, u32 } from "../iquants.ts";

/** IQ3_XXS's geometry: all a GGUF header needs (`../blocks.ts`). */
export const IQ3_XXS_BLOCK = {
  type: "IQ3_XXS",
  ggmlType: 18,
  blockSize: 256,
  blockBytes: 98,
  fragment: "iq3_xxs",
} as const satisfies QuantBlock;

export const IQ3_XXS: QuantFormat = {
  ...IQ3_XXS_BLOCK,
  decode(bytes, offset, out, outOffset, table) {
    const words = gridWords(IQ3XXS_GRID, table);
    const d = readF16(bytes, offset);
    for (let i = 0; i < 8; i++) {
      const a = u32(bytes, offset + 66 + 4 * i);
      const db = d * (0.5 + (a >>> 28)) * 0.5;
      for (let l = 0; l < 4; l++) {
        const signs = iqSigns(a >>> (7 * l));
        const q = offset + 2 + 8 * i + 2 * l, o = outOffset + 32 * i + 8 * l;
        putEntry(words, 4, bytes[q]!, db, signs, out, o);
        putEntry(words, 4, bytes[q + 1]!, db, signs >> 4, out, o + 4);
      }
    }
  },
  // Largest weight: d · 15.5 / 2 · 62.
  randomBlock(out, offset, next) {
    randomBytes(out, offset + 2, 96, next);
    randomF16(out, offset, 1 / (7.75 * 62), next);
  },
  table: IQ3XXS_GRID,
};
