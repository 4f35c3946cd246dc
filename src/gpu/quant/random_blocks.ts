/**
 * Random but well-formed quantized weights, for kernel tests and benchmarks: every quant, scale
 * and high bit random, the f16 block scales random of a size that keeps weights within about
 * ±1. Much faster than quantizing, and it reaches bit patterns a quantizer never makes.
 */
import { numberToF16 } from "../dtype.ts";
import { quantFormat, quantizedBytes, type QuantType } from "./formats.ts";

/** Byte offsets of each format's f16 fields, each with the magnitude that keeps weights ≲ 1. */
const HALVES: Record<QuantType, readonly [number, number][]> = {
  Q8_0: [[0, 1 / 127]],
  Q4_0: [[0, 1 / 8]],
  Q4_1: [[0, 1 / 15], [2, 0.5]],
  Q5_0: [[0, 1 / 16]],
  Q5_1: [[0, 1 / 31], [2, 0.5]],
  Q4_K: [[0, 1 / (63 * 15)], [2, 1 / 63]],
  Q5_K: [[0, 1 / (63 * 31)], [2, 1 / 63]],
  Q6_K: [[208, 1 / (128 * 32)]],
  IQ4_NL: [[0, 1 / 127]],
};

/** `count` elements (whole blocks) of `type`, from a seeded generator (xorshift32). */
export function randomBlocks(type: QuantType, count: number, seed: number): Uint8Array {
  const f = quantFormat(type);
  const bytes = new Uint8Array(quantizedBytes(type, count));
  let s = (seed | 0) || 0x9e3779b9;
  const next = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return s >>> 0;
  };
  for (let i = 0; i < bytes.length; i += 4) {
    const r = next();
    for (let j = 0; j < 4 && i + j < bytes.length; j++) bytes[i + j] = (r >>> (8 * j)) & 0xff;
  }
  for (let b = 0; b < bytes.length; b += f.blockBytes) {
    for (const [at, size] of HALVES[f.type]) {
      const h = numberToF16((next() / 2 ** 31 - 1) * size);
      bytes[b + at] = h & 0xff;
      bytes[b + at + 1] = h >> 8;
    }
  }
  return bytes;
}
