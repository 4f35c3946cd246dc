/**
 * IQ3_XXS (ggml type 18): 3.06 bits per weight. Block of 256 weights, 98 bytes: f16 `d` at 0, 64
 * iq3xxs grid-index bytes at 2 (one per 4 weights, 4 values each), then per 32 weights
 * (sub-block i) a little-endian u32 at 66 + 4i: bits 7l..7l+6 are the sign code (`iqSigns`) of
 * weights 8l..8l+7, bits 28..31 the scale s. Weight = d · (0.5 + s) / 2 · grid · sign.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import {
  IQ3XXS_GRID,
  iqScale,
  iqSigns,
  iquantFormat,
  type IquantSubBlock,
  putEntry,
  u32,
} from "./iquants.ts";

/** Sub-block i of the block at `at` into out[o..o+31]. */
const subBlock: IquantSubBlock = (b, at, i, d, words, out, o) => {
  const a = u32(b, at + 66 + 4 * i);
  const db = iqScale(d, a >>> 28, 0.5);
  for (let l = 0; l < 4; l++) {
    const signs = iqSigns(a >>> (7 * l));
    const q = at + 2 + 8 * i + 2 * l;
    putEntry(words, 4, b[q]!, db, signs, out, o + 8 * l);
    putEntry(words, 4, b[q + 1]!, db, signs >> 4, out, o + 8 * l + 4);
  }
};

/** IQ3_XXS's geometry: all a GGUF header needs (`../blocks.ts`). */
export const IQ3_XXS_BLOCK: QuantBlockOf<"IQ3_XXS"> = quantBlock("IQ3_XXS", 18, 256, 98);

// Largest weight: d · 15.5 / 2 · 62.
export const IQ3_XXS: WeightFormat = iquantFormat(IQ3_XXS_BLOCK, IQ3XXS_GRID, 7.75 * 62, subBlock);
