/**
 * IQ1_M (ggml type 29): 1.75 bits per weight. Block of 256 weights, 56 bytes: 32 low grid-index
 * bytes at 0 (one per 8 weights), 16 `qh` bytes at 32 (two per 32 weights: each nibble gives
 * index bits 8..10 of one run of 8 and, in its bit 3, the sign of that run's shift δ = ±1/8),
 * and 4 little-endian u16 at 48: u16 k holds the 3-bit scales of the four 8-weight halves of
 * sub-blocks 2k and 2k+1 in bits 0..11, and in bits 12..15 nibble k of the f16 block scale d.
 * The grid is IQ1_S's; weight = d · (2s + 1) · (grid + δ), one s per 16 weights.
 */
import { f16ToNumber, numberToF16 } from "./halves.ts";
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { randomBytes } from "./block.ts";
import { gridWords, IQ1_DELTA, IQ1S_GRID, putIq1, u16 } from "./iquants.ts";

/** The f16 bits of d, gathered from the top nibbles of the 4 scale words at `at`. */
const iq1mScaleBits = (b: Uint8Array, at: number): number =>
  (b[at + 1]! >> 4) | (b[at + 3]! & 0xf0) | ((b[at + 5]! >> 4) << 8) | ((b[at + 7]! & 0xf0) << 8);

/** IQ1_M's geometry: all a GGUF header needs (`../blocks.ts`). */
export const IQ1_M_BLOCK: QuantBlockOf<"IQ1_M"> = quantBlock("IQ1_M", 29, 256, 56);

export const IQ1_M: WeightFormat = {
  ...IQ1_M_BLOCK,
  decode(bytes, offset, out, outOffset, table) {
    const words = gridWords(IQ1S_GRID, table);
    const d = f16ToNumber(iq1mScaleBits(bytes, offset + 48));
    for (let i = 0; i < 8; i++) {
      const sc = u16(bytes, offset + 48 + 2 * (i >> 1)) >> (6 * (i & 1));
      for (let l = 0; l < 4; l++) {
        const dl = d * (2 * ((sc >> (3 * (l >> 1))) & 7) + 1);
        const qh = bytes[offset + 32 + 2 * i + (l >> 1)]! >> (4 * (l & 1));
        const index = bytes[offset + 4 * i + l]! | ((qh & 7) << 8);
        putIq1(words, index, dl, qh & 8 ? -IQ1_DELTA : IQ1_DELTA, out, outOffset + 32 * i + 8 * l);
      }
    }
  },
  randomBlock(out, offset, next) {
    randomBytes(out, offset, 56, next);
    // Largest weight: d · 15 · 1.125. d's nibble k is the top nibble of the u16 at 48 + 2k.
    const h = numberToF16((next() / 2 ** 31 - 1) / (15 * 1.125));
    for (let k = 0; k < 4; k++) {
      const at = offset + 49 + 2 * k;
      out[at] = (out[at]! & 0x0f) | (((h >> (4 * k)) & 15) << 4);
    }
  },
  table: IQ1S_GRID,
};
