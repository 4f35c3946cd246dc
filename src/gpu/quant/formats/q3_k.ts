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
 * against `d` and tried ±1. GPU decoder: `shaders/quant/q3_k.wgsl`.
 */
import type { QuantBlock, QuantFormat } from "../format.ts";
import { clamp, randomBytes, randomF16, readF16, roundHalfAway, writeF16 } from "../block.ts";

/** The 6-bit scale (0..63, stored with an offset of 32) of sub-block i of the block at `at`. */
export function q3kScale(bytes: Uint8Array, at: number, i: number): number {
  const low = (bytes[at + 96 + (i & 7)]! >> (4 * (i >> 3))) & 15;
  const high = (bytes[at + 104 + (i & 3)]! >> (2 * (i >> 2))) & 3;
  return low | (high << 4);
}

/** The level (−4..3) of x for `step`. */
const level = (x: number, step: number) => step === 0 ? 0 : clamp(roundHalfAway(x / step), -4, 3);

/** Squared error of x[from..from+16) as step·q, q in −4..3. */
function symError(x: ArrayLike<number>, from: number, step: number): number {
  let err = 0;
  for (let i = from; i < from + 16; i++) err += (x[i]! - step * level(x[i]!, step)) ** 2;
  return err;
}

/** A signed step for x[from..from+16) ≈ step·q, q in −4..3. */
function fitStep(x: ArrayLike<number>, from: number): number {
  let max = 0;
  for (let i = from; i < from + 16; i++) if (Math.abs(x[i]!) > Math.abs(max)) max = x[i]!;
  if (max === 0) return 0;
  let best = max / -4, bestErr = symError(x, from, best);
  for (let c = -10; c <= 10; c++) {
    for (const step of [max / -(4 + c / 10), max / (3 + c / 10)]) {
      const err = symError(x, from, step);
      if (err < bestErr) [best, bestErr] = [step, err];
    }
  }
  return best;
}

/** Q3_K's geometry: all a GGUF header needs (`../blocks.ts`). */
export const Q3_K_BLOCK = {
  type: "Q3_K",
  ggmlType: 11,
  blockSize: 256,
  blockBytes: 110,
  fragment: "q3_k",
} as const satisfies QuantBlock;

export const Q3_K: QuantFormat = {
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
    const steps = Array.from({ length: 16 }, (_, i) => fitStep(values, from + 16 * i));
    let extreme = 0;
    for (const s of steps) if (Math.abs(s) > Math.abs(extreme)) extreme = s;
    const d = writeF16(out, at + 108, extreme / -32);
    out.fill(0, at, at + 108);
    for (let i = 0; i < 16; i++) {
      const s0 = d === 0 ? 0 : clamp(roundHalfAway(steps[i]! / d), -32, 31);
      let [sc, bestErr] = [s0, Infinity];
      for (const s of [s0, s0 - 1, s0 + 1]) {
        if (s < -32 || s > 31) continue;
        const err = symError(values, from + 16 * i, d * s);
        if (err < bestErr) [sc, bestErr] = [s, err];
      }
      out[at + 96 + (i & 7)]! |= ((sc + 32) & 15) << (4 * (i >> 3));
      out[at + 104 + (i & 3)]! |= ((sc + 32) >> 4) << (2 * (i >> 2));
      for (let e = 16 * i; e < 16 * i + 16; e++) {
        const q = level(values[from + e]!, d * sc) + 4;
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
