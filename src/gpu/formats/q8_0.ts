/**
 * Q8_0, 34-byte blocks of 32: f16 `d` at 0, 32 × int8 `q` at 2; element i = d · q[i].
 * GPU decoder: `shaders/formats/q8_0.wgsl`.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { randomBytes, randomF16, readF16, roundLevels, writeF16 } from "./block.ts";

/** Q8_0's geometry: all a GGUF header needs (`../blocks.ts`). */
export const Q8_0_BLOCK: QuantBlockOf<"Q8_0"> = quantBlock("Q8_0", 8, 32, 34);

export const Q8_0: WeightFormat = {
  ...Q8_0_BLOCK,
  decode(src, at, out, outAt) {
    const d = readF16(src, at);
    for (let i = 0; i < 32; i++) out[outAt + i] = d * ((src[at + 2 + i]! << 24) >> 24);
  },
  encode(values, from, dst, at) {
    let amax = 0;
    for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(values[from + i]!));
    const d = writeF16(dst, at, amax / 127);
    roundLevels(values, from, d, 0, 0, [-127, 127], dst, at + 2);
  },
  randomBlock(out, at, next) {
    randomBytes(out, at + 2, 32, next);
    randomF16(out, at, 1 / 127, next);
  },
};
