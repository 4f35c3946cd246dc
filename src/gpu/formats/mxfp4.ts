/**
 * MXFP4 (ggml type 39), the OCP Microscaling FP4 format: 17-byte blocks of 32 weights. An E8M0
 * exponent byte `e` at 0, 16 bytes of 4-bit E2M1 codes at 1 in Q4_0's nibble order (element
 * i < 16 the low nibble of byte i, element i + 16 its high nibble).
 * Element = 2^(e − 127) · e2m1(code); ggml keeps the E2M1 values doubled (integers) and halves
 * the scale, which is the same number.
 */
import { quantBlock, type QuantBlockOf, type WeightFormat } from "./format.ts";
import { decodeNibbles, randomBytes } from "./block.ts";

/**
 * Twice the E2M1 value of a 4-bit code: sign bit 3, exponent bits 1..2, mantissa bit 0;
 * 2·|value| = m for exponent 0 (subnormal), (2 + m) · 2^(exponent − 1) otherwise. −0 reads as 0.
 */
export function e2m1Doubled(code: number): number {
  const e = (code >> 1) & 3, m = code & 1;
  const magnitude = e === 0 ? m : (2 + m) << (e - 1);
  return code & 8 ? 0 - magnitude : magnitude;
}

/** The code (0..15) whose E2M1 value is nearest `v` (ties to the smaller magnitude). */
function nearestCode(v: number): number {
  const a = Math.abs(v) * 2;
  let c = 0;
  while (c < 7 && Math.abs(e2m1Doubled(c + 1) - a) < Math.abs(e2m1Doubled(c) - a)) c++;
  return v < 0 && c !== 0 ? c | 8 : c;
}

/** MXFP4's geometry: all a GGUF header needs (`../blocks.ts`). */
export const MXFP4_BLOCK: QuantBlockOf<"MXFP4"> = quantBlock("MXFP4", 39, 32, 17);

export const MXFP4: WeightFormat = {
  ...MXFP4_BLOCK,
  decode(bytes, offset, out, outOffset) {
    const d = 2 ** (bytes[offset]! - 128);
    decodeNibbles(bytes, offset + 1, out, outOffset, (q) => d * e2m1Doubled(q));
  },
  encode(values, offset, out, outOffset) {
    // The smallest power-of-two scale that puts the largest magnitude within E2M1's ±6.
    let amax = 0;
    for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(values[offset + i]!));
    const e = amax === 0 ? 0 : Math.min(254, Math.max(0, 127 + Math.ceil(Math.log2(amax / 6))));
    out[outOffset] = e;
    const inv = amax === 0 ? 0 : 2 ** (127 - e);
    for (let i = 0; i < 16; i++) {
      const lo = nearestCode(values[offset + i]! * inv);
      out[outOffset + 1 + i] = lo | (nearestCode(values[offset + 16 + i]! * inv) << 4);
    }
  },
  randomBlock(out, offset, next) {
    randomBytes(out, offset + 1, 16, next);
    // |element| ≤ 6 · 2^(e − 127): e in 118..124 keeps weights within ±0.75.
    out[offset] = 118 + (next() % 7);
  },
};
