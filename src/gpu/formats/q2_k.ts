/**
 * Q2_K (ggml type 10): 256 weights in 84 bytes, 16 sub-blocks of 16 with a 4-bit scale and a
 * 4-bit min each under two f16 super-block scales. Layout (bytes, little-endian):
 *
 * - 16 bytes at 0: byte j holds sub-block j's scale in its low nibble and its min in the high;
 * - 64 bytes of 2-bit quants at 16: element 128h + 32c + l (half h, c 0..3, l < 32) is bits
 *   2c..2c+1 of byte 16 + 32h + l;
 * - f16 `d` at 80, f16 `dmin` at 82.
 *
 * Element e = d·scale[e/16]·q − dmin·min[e/16]. In float64 that is exact (a product of an f16
 * and a 6-bit integer is 17 bits; the difference of two spans < 53 bits), so rounding it to f32
 * gives what ggml's f32 arithmetic gives.
 *
 * `encode` fits each sub-block's (step, offset) as Q4_K's encoder does (`../kscales.ts`), then
 * rounds the steps and offsets to 4 bits against `d` = largest step / 15 and `dmin` = largest
 * offset / 15, trying each ±1 against the sub-block's squared error.
 * GPU decoder: `shaders/formats/q2_k.wgsl`.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { clamp, randomBytes, randomF16, readF16, roundHalfAway, writeF16 } from "./block.ts";
import { asymError, fitAsym, levelOf } from "./kscales.ts";

/** Element e's 2-bit quant: [byte offset in the block, shift]. */
const place = (e: number): [number, number] => [16 + 32 * (e >> 7) + (e & 31), 2 * ((e >> 5) & 3)];

/** Q2_K's geometry: all a GGUF header needs (`../blocks.ts`). */
export const Q2_K_BLOCK: QuantBlockOf<"Q2_K"> = quantBlock("Q2_K", 10, 256, 84);

export const Q2_K: WeightFormat = {
  ...Q2_K_BLOCK,
  decode(bytes, offset, out, outOffset) {
    const d = readF16(bytes, offset + 80), dmin = readF16(bytes, offset + 82);
    for (let e = 0; e < 256; e++) {
      const sm = bytes[offset + (e >> 4)]!;
      const [at, shift] = place(e);
      const q = (bytes[offset + at]! >> shift) & 3;
      out[outOffset + e] = d * (sm & 15) * q - dmin * (sm >> 4);
    }
  },
  encode(values, from, out, at) {
    const fits = Array.from({ length: 16 }, (_, j) => fitAsym(values, from + 16 * j, 16, 3));
    const d = writeF16(out, at + 80, Math.max(...fits.map((f) => f[0])) / 15);
    const dmin = writeF16(out, at + 82, Math.max(...fits.map((f) => f[1])) / 15);
    out.fill(0, at + 16, at + 80);
    for (let j = 0; j < 16; j++) {
      const [step, offset] = fits[j]!;
      const ls0 = d > 0 ? clamp(roundHalfAway(step / d), 0, 15) : 0;
      const lm0 = dmin > 0 ? clamp(roundHalfAway(offset / dmin), 0, 15) : 0;
      let [ls, lm, bestErr] = [ls0, lm0, Infinity];
      for (const s of [ls0, ls0 - 1, ls0 + 1]) {
        for (const m of [lm0, lm0 - 1, lm0 + 1]) {
          if (s < 0 || s > 15 || m < 0 || m > 15) continue;
          const err = asymError(values, from + 16 * j, 16, 3, d * s, dmin * m);
          if (err < bestErr) [ls, lm, bestErr] = [s, m, err];
        }
      }
      out[at + j] = ls | (lm << 4);
      for (let e = 16 * j; e < 16 * j + 16; e++) {
        const [qat, shift] = place(e);
        out[at + qat]! |= levelOf(values[from + e]!, d * ls, dmin * lm, 3) << shift;
      }
    }
  },
  randomBlock(out, offset, next) {
    randomBytes(out, offset, 80, next);
    randomF16(out, offset + 80, 1 / (15 * 3), next);
    randomF16(out, offset + 82, 1 / 15, next);
  },
};
