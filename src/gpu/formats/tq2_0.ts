/**
 * TQ2_0 (ggml type 35): 256 ternary weights in 66 bytes, two bits each. Layout (bytes,
 * little-endian): 64 bytes `qs` at 0, element 128h + 32c + l (half h, c 0..3, l < 32) in bits
 * 2c..2c+1 of byte 32h + l; f16 `d` at 64. Element = d·(q − 1); ggml's quantizer writes q in
 * 0..2 (a stored 3 would decode to 2d). GPU decoder: `shaders/formats/tq2_0.wgsl`.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { randomF16, readF16, writeF16 } from "./block.ts";
import { ternary } from "./tq1_0.ts";

/** Where element e lives: [byte offset in the block, bit shift]. */
const place = (e: number): [number, number] => [32 * (e >> 7) + (e & 31), 2 * ((e >> 5) & 3)];

/** TQ2_0's geometry: all a GGUF header needs (`../blocks.ts`). */
export const TQ2_0_BLOCK: QuantBlockOf<"TQ2_0"> = quantBlock("TQ2_0", 35, 256, 66);

export const TQ2_0: WeightFormat = {
  ...TQ2_0_BLOCK,
  decode(bytes, offset, out, outOffset) {
    const d = readF16(bytes, offset + 64);
    for (let e = 0; e < 256; e++) {
      const [at, shift] = place(e);
      out[outOffset + e] = (((bytes[offset + at]! >> shift) & 3) - 1) * d;
    }
  },
  encode(values, offset, out, outOffset) {
    let amax = 0;
    for (let e = 0; e < 256; e++) amax = Math.max(amax, Math.abs(values[offset + e]!));
    const d = writeF16(out, outOffset + 64, amax);
    out.fill(0, outOffset, outOffset + 64);
    for (let e = 0; e < 256; e++) {
      const [at, shift] = place(e);
      const t = ternary(values[offset + e]!, d);
      out[outOffset + at]! |= (t + 1) << shift;
    }
  },
  randomBlock(out, offset, next) {
    for (let at = 0; at < 64; at++) {
      let r = next(), byte = 0;
      for (let c = 0; c < 4; c++, r = Math.floor(r / 3)) byte |= (r % 3) << (2 * c);
      out[offset + at] = byte;
    }
    randomF16(out, offset + 64, 1, next);
  },
};
