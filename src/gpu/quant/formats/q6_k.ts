/**
 * Q6_K, 210-byte super-blocks of 256: 128 bytes `ql` at 0, 64 bytes `qh` at 128, 16 × int8
 * scales at 192, f16 `d` at 208. Sixteen sub-blocks of 16; element e = d·sc[e/16]·(q − 32), q 6
 * bits. In half h (128 elements) for l < 32, element 128h + 32c + l takes ql byte 64h + l (c = 0,
 * 2) or 64h + 32 + l (c = 1, 3), its low nibble for c < 2 and high nibble otherwise, and bits
 * 2c..2c+1 of qh byte 32h + l as bits 4..5. GPU decoder: `shaders/quant/q6_k.wgsl`.
 */
import type { QuantBlock, QuantFormat } from "../format.ts";
import { clamp, randomBytes, randomF16, readF16, roundHalfAway, writeF16 } from "../block.ts";

/** Squared error of x[from..from+16) as step·q, q in −32..31. */
function symError(x: ArrayLike<number>, from: number, step: number): number {
  let err = 0;
  for (let i = from; i < from + 16; i++) {
    const q = step === 0 ? 0 : clamp(roundHalfAway(x[i]! / step), -32, 31);
    err += (x[i]! - step * q) ** 2;
  }
  return err;
}

/** A signed step for x ≈ step·q, q in −32..31: the extreme value mapped near −32 or near 31. */
function fitSym(x: ArrayLike<number>, from: number): number {
  let max = 0;
  for (let i = from; i < from + 16; i++) if (Math.abs(x[i]!) > Math.abs(max)) max = x[i]!;
  if (max === 0) return 0;
  let best = max / -32, bestErr = symError(x, from, best);
  for (let c = -5; c <= 5; c++) {
    for (const step of [max / -(32 + c / 10), max / (31 + c / 10)]) {
      const err = symError(x, from, step);
      if (err < bestErr) [best, bestErr] = [step, err];
    }
  }
  return best;
}

/** Q6_K's geometry: all a GGUF header needs (`../blocks.ts`). */
export const Q6_K_BLOCK = {
  type: "Q6_K",
  ggmlType: 14,
  blockSize: 256,
  blockBytes: 210,
  fragment: "q6_k",
} as const satisfies QuantBlock;

export const Q6_K: QuantFormat = {
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
    const steps = Array.from({ length: 16 }, (_, j) => fitSym(values, from + 16 * j));
    let extreme = 0;
    for (const s of steps) if (Math.abs(s) > Math.abs(extreme)) extreme = s;
    // The sub-block with the largest step gets scale −128, the most negative int8.
    const d = writeF16(dst, at + 208, extreme / -128);
    const levels = new Uint8Array(256);
    for (let j = 0; j < 16; j++) {
      const s0 = d === 0 ? 0 : clamp(roundHalfAway(steps[j]! / d), -128, 127);
      let sc = s0, bestErr = Infinity;
      for (const s of [s0, s0 - 1, s0 + 1]) {
        if (s < -128 || s > 127) continue;
        const err = symError(values, from + 16 * j, d * s);
        if (err < bestErr) [bestErr, sc] = [err, s];
      }
      dst[at + 192 + j] = sc & 0xff;
      const step = d * sc;
      for (let l = 0; l < 16; l++) {
        const v = values[from + 16 * j + l]!;
        levels[16 * j + l] = (step === 0 ? 0 : clamp(roundHalfAway(v / step), -32, 31)) + 32;
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
