/**
 * Test-only: plant a one-step error in a single weight of quantized blocks, for tests that show
 * a comparison catches it. Block layouts as in `src/gpu/quant/legacy.ts` and `kquants.ts`.
 */
import { dequantize, QUANT_FORMATS, type QuantType } from "../../src/gpu/quant/formats.ts";

/**
 * Per format, the bytes of a block that hold quants: `int8` bytes (Q8_0) are one element's quant
 * each; in the others the low nibble of a byte is one element's quant (Q4_0, Q4_1, Q4_K; IQ4_NL's
 * indexes a non-uniform level, so its step varies) or its
 * low four bits (the `qs` of Q5_0, Q5_1 and Q5_K, Q6_K's `ql`), so ±1 on it moves that one
 * element by one step.
 */
const QUANT_BYTES: Record<QuantType, readonly [number, number, "int8" | "nibble"]> = {
  Q8_0: [2, 34, "int8"],
  Q4_0: [2, 18, "nibble"],
  Q4_1: [4, 20, "nibble"],
  Q5_0: [6, 22, "nibble"],
  Q5_1: [8, 24, "nibble"],
  Q4_K: [16, 144, "nibble"],
  Q5_K: [48, 176, "nibble"],
  Q6_K: [0, 128, "nibble"],
  IQ4_NL: [2, 18, "nibble"],
};

/** Where a one-step error went: the element (in the whole tensor) and how much it moved. */
export interface PlantedStep {
  element: number;
  delta: number;
}

/**
 * Move one weight of block `block` of `bytes` (in place) by one quantization step: a quant byte
 * picked by `rand` (uniform in [0, 1)) gets +1 on its quant, or −1 at the top of its range.
 * Dequantizing the block before and after checks that exactly one element moved; a pick that
 * moves nothing (its sub-block scale is 0, so that weight has no step) is drawn again.
 */
export function plantOneStep(
  type: QuantType,
  bytes: Uint8Array,
  block: number,
  rand: () => number,
): PlantedStep {
  const f = QUANT_FORMATS[type];
  const [start, end, kind] = QUANT_BYTES[type];
  const at = block * f.blockBytes;
  const before = dequantize(type, bytes.subarray(at, at + f.blockBytes), f.blockSize);
  for (let attempt = 0; attempt < 64; attempt++) {
    const i = at + start + Math.floor(rand() * (end - start));
    const old = bytes[i]!;
    if (kind === "int8") {
      bytes[i] = old === 0x7f ? 0x7e : (old + 1) & 0xff;
    } else {
      const low = old & 15;
      bytes[i] = (old & 0xf0) | (low === 15 ? 14 : low + 1);
    }
    const after = dequantize(type, bytes.subarray(at, at + f.blockBytes), f.blockSize);
    const moved = [...after.keys()].filter((e) => after[e] !== before[e]);
    if (moved.length === 1) {
      const e = moved[0]!;
      return { element: block * f.blockSize + e, delta: after[e]! - before[e]! };
    }
    if (moved.length > 1) throw new Error(`${type}: byte ${i - at} moved ${moved.length} weights`);
    bytes[i] = old;
  }
  throw new Error(`${type}: block ${block} has no weight with a nonzero step`);
}

/** A seeded uniform generator in [0, 1) (mulberry32). */
export function uniform(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
