/**
 * IQ2_XXS (ggml type 16): 2.06 bits per weight. Block of 256 weights, 66 bytes: f16 `d` at 0,
 * then per 32 weights (sub-block i, 8 bytes at 2 + 8i) two little-endian u32 `a`, `b`: byte l of
 * `a` indexes the iq2xxs grid (8 values) for weights 8l..8l+7, bits 7l..7l+6 of `b` are their sign
 * code (`iqSigns`) and bits 28..31 the sub-block scale s. Weight = d · (0.5 + s) / 4 · grid · sign.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import {
  IQ2XXS_GRID,
  iqScale,
  iqSigns,
  iquantFormat,
  type IquantSubBlock,
  putEntry,
  u32,
} from "./iquants.ts";

/** Sub-block i of the block at `at` into out[o..o+31]. */
const subBlock: IquantSubBlock = (b, at, i, d, words, out, o) => {
  const sub = at + 2 + 8 * i;
  const bits = u32(b, sub + 4);
  const db = iqScale(d, bits >>> 28, 0.25);
  for (let l = 0; l < 4; l++) {
    const signs = iqSigns(bits >>> (7 * l));
    putEntry(words, 8, b[sub + l]!, db, signs, out, o + 8 * l);
  }
};

/** IQ2_XXS's geometry: all a GGUF header needs (`../blocks.ts`). */
export const IQ2_XXS_BLOCK: QuantBlockOf<"IQ2_XXS"> = quantBlock("IQ2_XXS", 16, 256, 66);

// Largest weight: d · 15.5 / 4 · 43.
export const IQ2_XXS: WeightFormat = iquantFormat(IQ2_XXS_BLOCK, IQ2XXS_GRID, 3.875 * 43, subBlock);
