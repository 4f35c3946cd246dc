/**
 * Q6_K, 210-byte super-blocks of 256: 128 bytes `ql` at 0, 64 bytes `qh` at 128, 16 × int8
 * scales at 192, f16 `d` at 208. Sixteen sub-blocks of 16; element e = d·sc[e/16]·(q − 32), q 6
 * bits. In half h (128 elements) for l < 32, element 128h + 32c + l takes ql byte 64h + l (c = 0,
 * 2) or 64h + 32 + l (c = 1, 3), its low nibble for c < 2 and high nibble otherwise, and bits
 * 2c..2c+1 of qh byte 32h + l as bits 4..5. GPU decoder: `shaders/formats/q6_k.wgsl`.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { largestMagnitude, randomBytes, randomF16, readF16, writeF16 } from "./block.ts";
import { fitSymStep, symLevel, symScale } from "./sym_steps.ts";

const LEVELS = [-32, 31] as const, SCALES = [-128, 127] as const;

/** Q6_K's geometry: all a GGUF header needs (`../blocks.ts`). */
export const Q6_K_BLOCK: QuantBlockOf<"Q6_K"> = quantBlock("Q6_K", 14, 256, 210);

export const Q6_K: WeightFormat = {
  ...Q6_K_BLOCK,
  decode(src, at, out, outAt) {
    const d = readF16(src, at + 208);
    for (let h = 0; h < 2; h++) {
      for (let c = 0; c < 4; c++) {
        for (let l = 0; l < 32; l++) {
          const byte = src[at + 64 * h + 32 * (c & 1) + l]!;
          const q = (c < 2 ? byte & 15 : byte >> 4) |
            (((src[at + 128 + 32 * h + l]! >> (2 * c)) & 3) << 4);
          const e = 128 * h + 32 * c + l;
          out[outAt + e] = d * ((src[at + 192 + (e >> 4)]! << 24) >> 24) * (q - 32);
        }
      }
    }
  },
  encode(values, from, dst, at) {
    const steps = Array.from(
      { length: 16 },
      (_, j) => fitSymStep(values, from + 16 * j, LEVELS, 5),
    );
    // The sub-block with the largest step gets scale −128, the most negative int8.
    const d = writeF16(dst, at + 208, largestMagnitude(steps, 0, 16) / -128);
    const levels = new Uint8Array(256);
    for (let j = 0; j < 16; j++) {
      const sc = symScale(values, from + 16 * j, steps[j]!, d, SCALES, LEVELS);
      dst[at + 192 + j] = sc & 0xff;
      const step = d * sc;
      for (let l = 0; l < 16; l++) {
        levels[16 * j + l] = symLevel(values[from + 16 * j + l]!, step, LEVELS) + 32;
      }
    }
    for (let h = 0; h < 2; h++) {
      for (let l = 0; l < 32; l++) {
        const [a, b, c, e] = [0, 32, 64, 96].map((o) => levels[128 * h + o + l]!) as [
          number,
          number,
          number,
          number,
        ];
        dst[at + 64 * h + l] = (a & 15) | ((c & 15) << 4);
        dst[at + 64 * h + 32 + l] = (b & 15) | ((e & 15) << 4);
        dst[at + 128 + 32 * h + l] = (a >> 4) | ((b >> 4) << 2) | ((c >> 4) << 4) | ((e >> 4) << 6);
      }
    }
  },
  randomBlock(out, at, next) {
    randomBytes(out, at, 208, next);
    randomF16(out, at + 208, 1 / (128 * 32), next);
  },
};
