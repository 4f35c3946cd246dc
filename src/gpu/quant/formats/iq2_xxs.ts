/**
 * IQ2_XXS (ggml type 16): 2.06 bits per weight. Block of 256 weights, 66 bytes: f16 `d` at 0,
 * then per 32 weights (sub-block i, 8 bytes at 2 + 8i) two little-endian u32 `a`, `b`: byte l of
 * `a` indexes the iq2xxs grid (8 values) for weights 8l..8l+7, bits 7l..7l+6 of `b` are their sign
 * code (`iqSigns`) and bits 28..31 the sub-block scale s. Weight = d · (0.5 + s) / 4 · grid · sign.
 */
import type { QuantBlock, QuantFormat } from "../format.ts";
import { randomBytes, randomF16, readF16 } from "../block.ts";
import { gridWords, IQ2XXS_GRID, iqSigns, putEntry, u32 } from "../iquants.ts";

/** IQ2_XXS's geometry: all a GGUF header needs (`../blocks.ts`). */
export const IQ2_XXS_BLOCK = {
  type: "IQ2_XXS",
  ggmlType: 16,
  blockSize: 256,
  blockBytes: 66,
  fragment: "iq2_xxs",
} as const satisfies QuantBlock;

export const IQ2_XXS: QuantFormat = {
  ...IQ2_XXS_BLOCK,
  decode(bytes, offset, out, outOffset, table) {
    const words = gridWords(IQ2XXS_GRID, table);
    const d = readF16(bytes, offset);
    for (let i = 0; i < 8; i++) {
      const at = offset + 2 + 8 * i;
      const b = u32(bytes, at + 4);
      const db = d * (0.5 + (b >>> 28)) * 0.25;
      for (let l = 0; l < 4; l++) {
        const signs = iqSigns(b >>> (7 * l));
        putEntry(words, 8, bytes[at + l]!, db, signs, out, outOffset + 32 * i + 8 * l);
      }
    }
  },
  // Largest weight: d · 15.5 / 4 · 43.
  randomBlock(out, offset, next) {
    randomBytes(out, offset + 2, 64, next);
    randomF16(out, offset, 1 / (3.875 * 43), next);
  },
  table: IQ2XXS_GRID,
};
