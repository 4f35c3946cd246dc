/**
 * Q3_K (ggml type 11): 256 weights in 110 bytes, 16 sub-blocks of 16 with a signed 6-bit scale
 * each under one f16 super-block scale; each weight has 2 low bits and a high bit. Layout (bytes,
 * little-endian):
 *
 * - `hmask`, 32 bytes at 0: element 128h + 32c + l (half h, c 0..3, l < 32) has its high bit in
 *   bit 4h + c of byte l;
 * - 64 bytes of 2-bit quants at 32: that element's low bits are bits 2c..2c+1 of byte
 *   32 + 32h + l;
 * - 12 scale bytes at 96: the 6-bit scale of sub-block i has its low 4 bits in nibble i/8 of
 *   byte 96 + i%8 and its top 2 bits in bits 2(i/4)..2(i/4)+1 of byte 104 + i%4;
 * - f16 `d` at 108.
 *
 * Element e = d·(scale[e/16] − 32)·(low + 4·high − 4): the high bit set means no offset. Exact
 * in float64, so rounding to f32 gives ggml's value.
 *
 * `encode`: each sub-block's signed step for levels −4..3 (its extreme value mapped near −4 or
 * near 3, whichever fits better), the largest step given scale −32 by `d`, each scale rounded
 * against `d` and tried ±1. GPU decoder: `shaders/formats/q3_k.wgsl`.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { largestMagnitude, randomBytes, randomF16, readF16, writeF16 } from "./block.ts";
import { fitSymStep, symLevel, symScale } from "./sym_steps.ts";

/** The 6-bit scale (0..63, stored with an offset of 32) of sub-block i of the block at `at`. */
export function q3kScale(bytes: Uint8Array, at: number, i: number): number {
  const low = (bytes[at + 96 + (i & 7)]! >> (4 * (i >> 3))) & 15;
  const high = (bytes[at + 104 + (i & 3)]! >> (2 * (i >> 2))) & 3;
  return low | (high << 4);
}

const LEVELS = [-4, 3] as const, SCALES = [-32, 31] as const;

/** Q3_K's geometry: all a GGUF header needs (`../blocks.ts`). */
export const Q3_K_BLOCK: QuantBlockOf<"Q3_K"> = quantBlock("Q3_K", 11, 256, 110);

export const Q3_K: WeightFormat = {
  ...Q3_K_BLOCK,
  decode(bytes, offset, out, outOffset) {
    const d = readF16(bytes, offset + 108);
    for (let i = 0; i < 16; i++) {
      const step = d * (q3kScale(bytes, offset, i) - 32);
      for (let e = 16 * i; e < 16 * i + 16; e++) {
        const h = e >> 7, c = (e >> 5) & 3, l = e & 31;
        const low = (bytes[offset + 32 + 32 * h + l]! >> (2 * c)) & 3;
        const high = (bytes[offset + l]! >> (4 * h + c)) & 1;
        out[outOffset + e] = step * (low + 4 * high - 4);
      }
    }
  },
  encode(values, from, out, at) {
    const steps = Array.from(
      { length: 16 },
      (_, i) => fitSymStep(values, from + 16 * i, LEVELS, 10),
    );
    const d = writeF16(out, at + 108, largestMagnitude(steps, 0, 16) / -32);
    out.fill(0, at, at + 108);
    for (let i = 0; i < 16; i++) {
      const sc = symScale(values, from + 16 * i, steps[i]!, d, SCALES, LEVELS);
      out[at + 96 + (i & 7)]! |= ((sc + 32) & 15) << (4 * (i >> 3));
      out[at + 104 + (i & 3)]! |= ((sc + 32) >> 4) << (2 * (i >> 2));
      for (let e = 16 * i; e < 16 * i + 16; e++) {
        const q = symLevel(values[from + e]!, d * sc, LEVELS) + 4;
        const h = e >> 7, c = (e >> 5) & 3, l = e & 31;
        out[at + 32 + 32 * h + l]! |= (q & 3) << (2 * c);
        out[at + l]! |= (q >> 2) << (4 * h + c);
      }
    }
  },
  randomBlock(out, offset, next) {
    randomBytes(out, offset, 108, next);
    randomF16(out, offset + 108, 1 / (32 * 4), next);
  },
};
