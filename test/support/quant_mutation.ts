/**
 * Test-only: plant a one-step error in a single weight of quantized blocks, for tests that show
 * a comparison catches it. Block layouts as in `src/gpu/formats/`.
 */
import { dequantize, QUANT_FORMATS, type QuantType } from "../../src/gpu/formats/registry.ts";

/**
 * Per format, the bytes of a block that hold quants: `int8` bytes (Q8_0) are one element's quant
 * each; in the others the low nibble of a byte is one element's quant (Q4_0, Q4_1, Q4_K; IQ4_NL's
 * and IQ4_XS's index a non-uniform level and MXFP4's an E2M1 code, so their step varies) or its
 * low four bits (the `qs` of Q5_0, Q5_1 and Q5_K, Q6_K's `ql`), its low two bits are one
 * element's (`2bit`: Q2_K, TQ2_0) or its low bits (Q3_K's `qs`), or its last base-3 trit is one
 * element's (`trit`: TQ1_0's `qs`), so ±1 on it moves that one element by one step. In IQ2_S and
 * IQ3_S a `sign` byte holds the signs of 8 weights: flipping one bit flips one weight. The other
 * i-quants store a grid `index` per 4 or 8 weights (with sign and scale bytes between them in
 * IQ2_XXS, IQ2_XS, IQ3_XXS): +1 on a byte moves one weight when the next grid entry differs from
 * this one in one value, so picks that move more are drawn again.
 */
type QuantBytes = readonly [number, number, "int8" | "nibble" | "2bit" | "trit" | "sign" | "index"];
const QUANT_BYTES: Record<QuantType, QuantBytes> = {
  Q8_0: [2, 34, "int8"],
  Q4_0: [2, 18, "nibble"],
  Q4_1: [4, 20, "nibble"],
  Q5_0: [6, 22, "nibble"],
  Q5_1: [8, 24, "nibble"],
  Q4_K: [16, 144, "nibble"],
  Q5_K: [48, 176, "nibble"],
  Q6_K: [0, 128, "nibble"],
  IQ4_NL: [2, 18, "nibble"],
  IQ4_XS: [8, 136, "nibble"],
  MXFP4: [1, 17, "nibble"],
  Q2_K: [16, 80, "2bit"],
  Q3_K: [32, 96, "2bit"],
  TQ1_0: [0, 48, "trit"],
  TQ2_0: [0, 64, "2bit"],
  IQ2_XXS: [2, 66, "index"],
  IQ2_XS: [2, 66, "index"],
  IQ2_S: [34, 66, "sign"],
  IQ3_XXS: [2, 66, "index"],
  IQ3_S: [74, 106, "sign"],
  IQ1_S: [2, 34, "index"],
  IQ1_M: [0, 32, "index"],
};

/** One step on the quant in the low `bits` bits of `byte` (down at the top of its range). */
function stepLow(byte: number, bits: number): number {
  const top = (1 << bits) - 1, low = byte & top;
  return (byte & ~top & 0xff) | (low === top ? top - 1 : low + 1);
}

/**
 * One step on the last trit of a TQ1_0 byte: it stores v (0..242, five trits) as ⌈256v / 243⌉,
 * so v = ⌊243·byte / 256⌋, and v ± 1 changes the last trit only (down when it is 2).
 */
function stepTrit(byte: number): number {
  const v = Math.floor((243 * byte) / 256);
  return Math.ceil((256 * (v % 3 === 2 ? v - 1 : v + 1)) / 243);
}

/** Where a one-step error went: the element (in the whole tensor) and how much it moved. */
export interface PlantedStep {
  element: number;
  delta: number;
}

/**
 * Move one weight of block `block` of `bytes` (in place) by one quantization step: a quant byte
 * picked by `rand` (uniform in [0, 1)) gets +1 on its quant, or −1 at the top of its range.
 * (IQ2_S, IQ3_S: one sign flipped; the other i-quants: a grid index + 1.) Dequantizing the block
 * before and after checks that exactly one element moved; a pick that moves nothing (its
 * sub-block scale is 0, so that weight has no step), or for a grid index more than one, is drawn
 * again.
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
  for (let attempt = 0; attempt < 256; attempt++) {
    const i = at + start + Math.floor(rand() * (end - start));
    const old = bytes[i]!;
    if (kind === "int8") bytes[i] = old === 0x7f ? 0x7e : (old + 1) & 0xff;
    else if (kind === "trit") bytes[i] = stepTrit(old);
    else if (kind === "sign") bytes[i] = old ^ (1 << Math.floor(rand() * 8));
    else if (kind === "index") bytes[i] = (old + 1) & 0xff;
    else bytes[i] = stepLow(old, kind === "nibble" ? 4 : 2);
    const after = dequantize(type, bytes.subarray(at, at + f.blockBytes), f.blockSize);
    const moved = [...after.keys()].filter((e) => after[e] !== before[e]);
    if (moved.length === 1) {
      const e = moved[0]!;
      return { element: block * f.blockSize + e, delta: after[e]! - before[e]! };
    }
    if (moved.length > 1 && kind !== "index") {
      throw new Error(`${type}: byte ${i - at} moved ${moved.length} weights`);
    }
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
