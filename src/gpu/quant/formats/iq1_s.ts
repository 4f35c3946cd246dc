/**
 * IQ1_S (ggml type 19): 1.56 bits per weight. Block of 256 weights, 50 bytes: f16 `d` at 0, 32
 * low grid-index bytes at 2 (one per 8 weights), and per 32 weights (sub-block i) a
 * little-endian u16 `h` at 34 + 2i: bits 3l..3l+2 are index bits 8..10 of its run l, bits 12..14
 * the scale s and bit 15 the sign of the shift δ = ±1/8. The iq1s grid holds values in {−1, 0, 1};
 * weight = d · (2s + 1) · (grid + δ).
 */
import type { QuantBlock, QuantFormat } from "../format.ts";
import { randomBytes, randomF16, readF16 } from "../block.ts";
import { gridWords, IQ1_DELTA, IQ1S_GRID, putIq1, u16 } from "../iquants.ts";

/** IQ1_S's geometry: all a GGUF header needs (`../blocks.ts`). */
export const IQ1_S_BLOCK = {
  type: "IQ1_S",
  ggmlType: 19,
  blockSize: 256,
  blockBytes: 50,
  fragment: "iq1_s",
} as const satisfies QuantBlock;

export const IQ1_S: QuantFormat = {
  ...IQ1_S_BLOCK,
  decode(bytes, offset, out, outOffset, table) {
    const words = gridWords(IQ1S_GRID, table);
    const d = readF16(bytes, offset);
    for (let i = 0; i < 8; i++) {
      const h = u16(bytes, offset + 34 + 2 * i);
      const dl = d * (2 * ((h >> 12) & 7) + 1);
      const delta = h & 0x8000 ? -IQ1_DELTA : IQ1_DELTA;
      for (let l = 0; l < 4; l++) {
        const index = bytes[offset + 2 + 4 * i + l]! | (((h >> (3 * l)) & 7) << 8);
        putIq1(words, index, dl, delta, out, outOffset + 32 * i + 8 * l);
      }
    }
  },
  // Largest weight: d · 15 · 1.125.
  randomBlock(out, offset, next) {
    randomBytes(out, offset + 2, 48, next);
    randomF16(out, offset, 1 / (15 * 1.125), next);
  },
  table: IQ1S_GRID,
};
