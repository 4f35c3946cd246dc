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
 */
import type { QuantFormat } from "../format.ts";
import { f16At, randomBytes, randomF16 } from "./block_fields.ts";

export const Q2_K: QuantFormat = {
  type: "Q2_K",
  ggmlType: 10,
  blockSize: 256,
  blockBytes: 84,
  fragment: "q2_k",
  decode(bytes, offset, out, outOffset) {
    const d = f16At(bytes, offset + 80), dmin = f16At(bytes, offset + 82);
    for (let e = 0; e < 256; e++) {
      const sm = bytes[offset + (e >> 4)]!;
      const q = (bytes[offset + 16 + 32 * (e >> 7) + (e & 31)]! >> (2 * ((e >> 5) & 3))) & 3;
      out[outOffset + e] = d * (sm & 15) * q - dmin * (sm >> 4);
    }
  },
  randomBlock(out, offset, next) {
    randomBytes(out, offset, 80, next);
    randomF16(out, offset + 80, 1 / (15 * 3), next);
    randomF16(out, offset + 82, 1 / 15, next);
  },
};
