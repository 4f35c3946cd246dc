/**
 * Random but well-formed quantized weights, for kernel tests and benchmarks: each block from its
 * format's `randomBlock` (every quant, scale and high bit random, scales sized to keep weights
 * within about ±1). Much faster than quantizing, and it reaches bit patterns a quantizer never
 * makes.
 */
import { quantFormat, quantizedBytes, type QuantType } from "./registry.ts";

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
  for (let b = 0; b < bytes.length; b += f.blockBytes) f.randomBlock(bytes, b, next);
  return bytes;
}
