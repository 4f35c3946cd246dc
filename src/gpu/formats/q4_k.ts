/**
 * Q4_K, 144-byte super-blocks of 256: `d`, `dmin` and the 12 scale bytes as in `../kscales.ts`,
 * 128 bytes of nibbles at 16. Sub-blocks 2p and 2p+1 share the 32 bytes at 16 + 32p: element l
 * of sub-block 2p is the low nibble of byte l, of sub-block 2p+1 the high.
 * GPU decoder: `shaders/formats/q4_k.wgsl`.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { decodeAsymBlock, encodeAsymBlock, randomAsymBlock } from "./kscales.ts";

/** Q4_K's geometry: all a GGUF header needs (`../blocks.ts`). */
export const Q4_K_BLOCK: QuantBlockOf<"Q4_K"> = quantBlock("Q4_K", 12, 256, 144);

export const Q4_K: WeightFormat = {
  ...Q4_K_BLOCK,
  decode: (src, at, out, outAt) => decodeAsymBlock(src, at, out, outAt, false),
  encode(values, from, dst, at) {
    const q = encodeAsymBlock(values, from, dst, at, 15);
    for (let p = 0; p < 4; p++) {
      for (let l = 0; l < 32; l++) {
        dst[at + 16 + 32 * p + l] = q[64 * p + l]! | (q[64 * p + 32 + l]! << 4);
      }
    }
  },
  randomBlock: (out, at, next) => randomAsymBlock(out, at, next, false),
};
