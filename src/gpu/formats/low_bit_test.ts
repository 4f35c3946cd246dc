/**
 * Q2_K, Q3_K, TQ1_0 and TQ2_0 beyond the ggml fixtures (`../ggml_fixtures_test.ts`): block
 * layouts checked on hand-made blocks, random blocks well-formed, and the ternary encoders'
 * round trips.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import type { WeightFormat } from "./format.ts";
import { Q2_K } from "./q2_k.ts";
import { Q3_K, q3kScale } from "./q3_k.ts";
import { TQ1_0, tq1Trit } from "./tq1_0.ts";
import { TQ2_0 } from "./tq2_0.ts";
import { seeded } from "../../../test/support/kernel_harness.ts";

const FORMATS: WeightFormat[] = [Q2_K, Q3_K, TQ1_0, TQ2_0];

function decodeAll(f: WeightFormat, bytes: Uint8Array): Float64Array {
  const blocks = bytes.length / f.blockBytes;
  const out = new Float64Array(blocks * f.blockSize);
  for (let b = 0; b < blocks; b++) f.decode(bytes, b * f.blockBytes, out, b * f.blockSize);
  return out;
}

/** A zero block of `size` bytes with the given bytes set. */
function block(size: number, set: Record<number, number>, fill = 0): Uint8Array {
  const b = new Uint8Array(size).fill(fill);
  for (const [at, v] of Object.entries(set)) b[+at] = v;
  return b;
}

// f16 bit patterns, little-endian byte pairs.
const ONE = [0x00, 0x3c], HALF = [0x00, 0x38], TWO = [0x00, 0x40];

Deno.test("Q2_K: scale/min nibbles per 16, 2-bit quants by shift, d at 80 and dmin at 82", () => {
  // Sub-block j: scale (j & 7) + 1, min j. Byte 16 + 32 + 20 (half 1, l 20) = 0b11100100 holds
  // q 0, 1, 2, 3 for shifts c = 0..3, elements 148, 180, 212, 244 (sub-blocks 9, 11, 13, 15);
  // byte 16 + 5 = 0b00011011 holds q 3, 2, 1, 0 for elements 5, 37, 69, 101.
  const set: Record<number, number> = { 80: ONE[0]!, 81: ONE[1]!, 82: HALF[0]!, 83: HALF[1]! };
  for (let j = 0; j < 16; j++) set[j] = ((j & 7) + 1) | (j << 4);
  Object.assign(set, { [16 + 32 + 20]: 0xe4, [16 + 5]: 0x1b });
  const got = decodeAll(Q2_K, block(84, set));
  const want = Array.from({ length: 256 }, (_, e) => -0.5 * (e >> 4));
  Object.assign(want, { 148: -4.5, 180: 4 - 5.5, 212: 12 - 6.5, 244: 24 - 7.5 });
  Object.assign(want, { 5: 3, 37: 6 - 1, 69: 5 - 2, 101: -3 });
  assertEquals([...got].map((v) => v + 0), want.map((v) => v + 0)); // −0 as 0
});

// Sixteen 6-bit scales and their 12 packed bytes, worked out by hand: scale i's low nibble is
// nibble i/8 of byte i%8, its top two bits are bits 2(i/4).. of byte 8 + i%4.
const SCALES = [0, 1, 31, 32, 33, 63, 16, 48, 5, 10, 20, 40, 50, 60, 62, 47];
const PACKED = [80, 161, 79, 128, 33, 207, 224, 240, 200, 204, 213, 174];

Deno.test("Q3_K: hand-packed 6-bit scales unpack to every scale", () => {
  const b = block(110, {});
  b.set(PACKED, 96);
  assertEquals(SCALES.map((_, i) => q3kScale(b, 0, i)), SCALES);
});

Deno.test("Q3_K: low bits by shift, high bit from hmask (set: no −4), scale − 32, d at 108", () => {
  const b = block(110, { 108: HALF[0]!, 109: HALF[1]! });
  b.set(PACKED, 96);
  // Half 1, l 7: quant byte 32 + 32 + 7 = 0b11100100 gives low bits 0, 1, 2, 3 to elements
  // 135, 167, 199, 231; hmask byte 7 = 0b10100000 sets the high bit (bit 4 + c) of c = 1, 3.
  b[32 + 32 + 7] = 0xe4;
  b[7] = 0xa0;
  const got = decodeAll(Q3_K, b);
  const step = (e: number) => 0.5 * (SCALES[e >> 4]! - 32);
  const want = Array.from({ length: 256 }, (_, e) => step(e) * -4);
  Object.assign(want, { 135: step(135) * -4, 167: step(167) * 1 });
  Object.assign(want, { 199: step(199) * -2, 231: step(231) * 3 });
  assertEquals([...got].map((v) => v + 0), want.map((v) => v + 0)); // −0 as 0
  // Spot values by hand: element 167 is sub-block 10 (scale 20): 0.5·(20 − 32)·(1 + 4 − 4).
  assertEquals([got[167], got[231], got[0]], [-6, 0.5 * 30 * 3, 0.5 * -32 * -4]);
});

Deno.test("TQ1_0: five base-3 trits per byte (first most significant), qh's four, d at 52", () => {
  // Byte 128 is trits 1,1,1,1,1 (weights 0); qh byte 127 is 1,1,1,1 and a fifth trit 0.
  // Worked by hand: trits 2,0,1,2,1 = 178 → ⌈178·256/243⌉ = 188; 0,2,2,0,1 = 73 → 77;
  // qh 2,1,0,2 = 65, shifted up a trit: 195 → 206.
  const b = block(54, { 3: 188, [32 + 5]: 77, [48 + 2]: 206, 52: HALF[0]!, 53: HALF[1]! }, 128);
  b.fill(127, 48, 48 + 2);
  b[48 + 3] = 127;
  const got = decodeAll(TQ1_0, b);
  const want = new Array(256).fill(0);
  [3, 35, 67, 99, 131].forEach((e, n) => want[e] = 0.5 * ([2, 0, 1, 2, 1][n]! - 1));
  [165, 181, 197, 213, 229].forEach((e, n) => want[e] = 0.5 * ([0, 2, 2, 0, 1][n]! - 1));
  [242, 246, 250, 254].forEach((e, n) => want[e] = 0.5 * ([2, 1, 0, 2][n]! - 1));
  assertEquals([...got].map((v) => v + 0), want);
  assertEquals([0, 1, 2, 3, 4].map((n) => tq1Trit(188, n)), [2, 0, 1, 2, 1]);
});

Deno.test("TQ2_0: 2-bit quants by shift, d·(q − 1), d at 64", () => {
  // Byte 0x55 is q = 1 at every shift (weights 0); byte 32 + 9 = 0b10010010 gives q 2, 0, 1, 2
  // to elements 137, 169, 201, 233.
  const b = block(66, { [32 + 9]: 0x92, 64: TWO[0]!, 65: TWO[1]! }, 0x55);
  const got = decodeAll(TQ2_0, b);
  const want = new Array(256).fill(0);
  Object.assign(want, { 137: 2, 169: -2, 201: 0, 233: 2 });
  assertEquals([...got].map((v) => v + 0), want);
});

/** xorshift32, as the contract's `next`. */
function rng(seed: number): () => number {
  let s = seed;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return s >>> 0;
  };
}

for (const f of FORMATS) {
  Deno.test(`${f.type}: random blocks are well-formed, weights within ±2, not constant`, () => {
    const blocks = 64, next = rng(12345 + f.ggmlType);
    const bytes = new Uint8Array(blocks * f.blockBytes);
    for (let b = 0; b < blocks; b++) f.randomBlock(bytes, b * f.blockBytes, next);
    const w = decodeAll(f, bytes);
    assert(w.every((v) => Math.abs(v) <= 2), "weights within ±2");
    const rms = Math.sqrt(w.reduce((s, v) => s + v * v, 0) / w.length);
    assert(rms > 0.05 && rms < 1.5, `rms ${rms}`);
    if (f === TQ1_0 || f === TQ2_0) {
      // Ternary: every weight is −d, 0 or d of its block, and encoding the weights again gives
      // them back (byte for byte when d > 0: −d flips every trit).
      for (let b = 0; b < blocks; b++) {
        const ws = w.subarray(b * 256, b * 256 + 256);
        const d = ws.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
        assert(ws.every((v) => v === 0 || Math.abs(v) === d), `block ${b} is ternary`);
        const again = new Uint8Array(f.blockBytes);
        f.encode!(w, b * 256, again, 0);
        assertEquals(decodeAll(f, again).map((v) => v + 0), ws.map((v) => v + 0));
        const orig = bytes.subarray(b * f.blockBytes, (b + 1) * f.blockBytes);
        if (orig[f.blockBytes - 1]! < 0x80 && d > 0) assertEquals(again, orig);
      }
    }
  });
}

for (const f of [TQ1_0, TQ2_0]) {
  Deno.test(`${f.type}: encode rounds each weight to the nearest of −d, 0, d (d = amax)`, () => {
    const values = Float64Array.from(seeded(21, 3 * 256), (v, i) => v * 10 ** (i >> 8));
    values.fill(0, 256, 512); // an all-zero block
    const bytes = new Uint8Array(3 * f.blockBytes);
    for (let b = 0; b < 3; b++) f.encode!(values, 256 * b, bytes, b * f.blockBytes);
    const got = decodeAll(f, bytes);
    for (let b = 0; b < 3; b++) {
      const x = values.subarray(256 * b, 256 * b + 256), y = got.subarray(256 * b, 256 * b + 256);
      const amax = x.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      for (let i = 0; i < 256; i++) {
        // The f16 scale is amax to 11 bits; each weight is the nearest ternary level to it.
        assert(Math.abs(y[i]! - x[i]!) <= amax / 2 * (1 + 2 ** -10), `block ${b} element ${i}`);
        assert(Math.abs(y[i]!) === 0 || Math.sign(y[i]!) === Math.sign(x[i]!));
      }
      if (b === 1) assert(y.every((v) => v === 0), "zero block");
    }
  });
}
