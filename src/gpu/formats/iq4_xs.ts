/**
 * IQ4_XS (ggml type 23): 136-byte super-blocks of 256 weights, eight sub-blocks of 32 with
 * IQ4_NL's non-linear levels and 6-bit scales. f16 `d` at byte 0, u16 `scales_h` at 2 (bits
 * 2j..2j+1: the high 2 bits of sub-block j's scale), 4 bytes `scales_l` at 4 (nibble j, low
 * first: its low 4 bits), 128 nibble bytes at 8: sub-block j takes bytes 8 + 16j .. 8 + 16j + 15
 * in IQ4_NL's order. Element = d · (scale_j − 32) · IQ4_NL_VALUES[nibble].
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { clamp, randomBytes, randomF16, readF16, roundHalfAway, writeF16 } from "./block.ts";
import { IQ4_NL_VALUES } from "./iq4_nl_values.ts";
import {
  decodeNonLinear,
  encodeNonLinear,
  IQ4_NL_TABLE,
  nonLinearLevels,
  signedMax,
} from "./iq4_nl.ts";

/** The 6-bit scale (0..63) of sub-block `j` of the block at `at`. */
export function iq4xsScale(src: Uint8Array, at: number, j: number): number {
  const high = src[at + 2]! | (src[at + 3]! << 8);
  return ((src[at + 4 + (j >> 1)]! >> (4 * (j & 1))) & 15) | (((high >> (2 * j)) & 3) << 4);
}

/** IQ4_XS's geometry: all a GGUF header needs (`../blocks.ts`). */
export const IQ4_XS_BLOCK: QuantBlockOf<"IQ4_XS"> = quantBlock("IQ4_XS", 23, 256, 136);

export const IQ4_XS: WeightFormat = {
  ...IQ4_XS_BLOCK,
  decode(bytes, offset, out, outOffset, table) {
    const d = readF16(bytes, offset);
    const levels = nonLinearLevels(table);
    for (let j = 0; j < 8; j++) {
      const dl = d * (iq4xsScale(bytes, offset, j) - 32);
      decodeNonLinear(bytes, offset + 8 + 16 * j, dl, levels, out, outOffset + 32 * j);
    }
  },
  encode(values, offset, out, outOffset) {
    // Each sub-block's own IQ4_NL scale, then d such that the largest of them is scale −32.
    const wanted = Array.from(
      { length: 8 },
      (_, j) => signedMax(values, offset + 32 * j, 32) / IQ4_NL_VALUES[0]!,
    );
    const d = writeF16(out, outOffset, signedMax(wanted, 0, 8) / -32);
    const inv = d === 0 ? 0 : 1 / d;
    let high = 0;
    out.fill(0, outOffset + 4, outOffset + 8);
    for (let j = 0; j < 8; j++) {
      const scale = clamp(roundHalfAway(wanted[j]! * inv), -32, 31) + 32;
      out[outOffset + 4 + (j >> 1)]! |= (scale & 15) << (4 * (j & 1));
      high |= (scale >> 4) << (2 * j);
      encodeNonLinear(values, offset + 32 * j, d * (scale - 32), out, outOffset + 8 + 16 * j);
    }
    out[outOffset + 2] = high & 0xff;
    out[outOffset + 3] = high >> 8;
  },
  randomBlock(out, offset, next) {
    randomBytes(out, offset + 2, 134, next);
    randomF16(out, offset, 1 / (32 * 127), next);
  },
  table: IQ4_NL_TABLE,
};
