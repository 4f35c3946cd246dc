/**
 * IQ1_S (ggml type 19): 1.56 bits per weight. Block of 256 weights, 50 bytes: f16 `d` at 0, 32
 * low grid-index bytes at 2 (one per 8 weights), and per 32 weights (sub-block i) a
 * little-endian u16 `h` at 34 + 2i: bits 3l..3l+2 are index bits 8..10 of its run l, bits 12..14
 * the scale s and bit 15 the sign of the shift δ = ±1/8. The iq1s grid holds values in {−1, 0, 1};
 * weight = d · (2s + 1) · (grid + δ).
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { IQ1_DELTA, IQ1S_GRID, iquantFormat, type IquantSubBlock, putIq1, u16 } from "./iquants.ts";

/** Sub-block i of the block at `at` into out[o..o+31]. */
const subBlock: IquantSubBlock = (b, at, i, d, words, out, o) => {
  const h = u16(b, at + 34 + 2 * i);
  const dl = d * (2 * ((h >> 12) & 7) + 1);
  const delta = h & 0x8000 ? -IQ1_DELTA : IQ1_DELTA;
  for (let l = 0; l < 4; l++) {
    const index = b[at + 2 + 4 * i + l]! | (((h >> (3 * l)) & 7) << 8);
    putIq1(words, index, dl, delta, out, o + 8 * l);
  }
};

/** IQ1_S's geometry: all a GGUF header needs (`../blocks.ts`). */
export const IQ1_S_BLOCK: QuantBlockOf<"IQ1_S"> = quantBlock("IQ1_S", 19, 256, 50);

// Largest weight: d · 15 · 1.125.
export const IQ1_S: WeightFormat = iquantFormat(IQ1_S_BLOCK, IQ1S_GRID, 15 * 1.125, subBlock);
