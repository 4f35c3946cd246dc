/**
 * Q5_K, 176-byte super-blocks of 256: `d`, `dmin` and the 12 scale bytes as in `../kscales.ts`,
 * 32 bytes `qh` at 16, 128 nibble bytes at 48 in Q4_K's order; element l of sub-block j adds 16
 * when bit j of qh[l] is set. GPU decoder: `shaders/formats/q5_k.wgsl`.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { decodeAsymBlock, encodeAsymBlock, randomAsymBlock } from "./kscales.ts";

/** Q5_K's geometry: all a GGUF header needs (`../blocks.ts`). */
export const Q5_K_BLOCK: QuantBlockOf<"Q5_K"> = quantBlock("Q5_K", 13, 256, 176);

export const Q5_K: WeightFormat = {
  ...Q5_K_BLOCK,
  decode: (src, at, out, outAt) => decodeAsymBlock(src, at, out, outAt, true),
  encode(values, from, dst, at) {
    const q = encodeAsymBlock(values, from, dst, at, 31);
    dst.fill(0, at + 16, at + 48);
    for (let p = 0; p < 4; p++) {
      for (let l = 0; l < 32; l++) {
        const [a, b] = [q[64 * p + l]!, q[64 * p + 32 + l]!];
        dst[at + 48 + 32 * p + l] = (a & 15) | ((b & 15) << 4);
        dst[at + 16 + l]! |= ((a >> 4) << (2 * p)) | ((b >> 4) << (2 * p + 1));
      }
    }
  },
  randomBlock: (out, at, next) => randomAsymBlock(out, at, next, true),
};
