/**
 * Q5_0, Q5_1, IQ4_NL, IQ4_XS and MXFP4: block layouts worked out by hand, IQ4's level table and
 * the random block generators (`../ggml_fixtures_test.ts` checks the decoders against ggml's own
 * output bit for bit, `../formats_test.ts` the encoders' round trip).
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import type { WeightFormat } from "./format.ts";
import { dequantize } from "./registry.ts";
import { loadQuantTable, loadQuantTables } from "./tables.ts";
import { IQ4_NL, IQ4_NL_TABLE } from "./iq4_nl.ts";
import { IQ4_NL_VALUES } from "./iq4_nl_values.ts";
import { IQ4_XS } from "./iq4_xs.ts";
import { MXFP4 } from "./mxfp4.ts";
import { Q5_0 } from "./q5_0.ts";
import { Q5_1 } from "./q5_1.ts";

// The IQ4 decoders read their levels from the table file.
await loadQuantTables();

const FORMATS: WeightFormat[] = [Q5_0, Q5_1, IQ4_NL, IQ4_XS, MXFP4];

const decodeAll = (f: WeightFormat, bytes: Uint8Array): Float64Array =>
  dequantize(f.type, bytes, (bytes.byteLength / f.blockBytes) * f.blockSize);

const F16_HALF = 0x3800, F16_QUARTER = 0x3400, F16_MINUS_TWO = 0xc000;

Deno.test("Q5_0 and Q5_1: qh bit i is the fifth bit of element i; nibbles in Q4_0's order", () => {
  // qh = 0x80000001 | 0x00010000: elements 0, 16 and 31 get their fifth bit.
  const qh = [0x01, 0x00, 0x01, 0x80];
  const q50 = new Uint8Array(22), q51 = new Uint8Array(24);
  [q50[0], q50[1]] = [F16_HALF & 0xff, F16_HALF >> 8];
  [q51[0], q51[1], q51[2], q51[3]] = [F16_QUARTER & 0xff, F16_QUARTER >> 8, 0, F16_MINUS_TWO >> 8];
  q50.set(qh, 2);
  q51.set(qh, 4);
  for (let i = 0; i < 16; i++) q50[6 + i] = q51[8 + i] = i | ((15 - i) << 4);
  const a = decodeAll(Q5_0, q50), b = decodeAll(Q5_1, q51);
  for (let i = 0; i < 32; i++) {
    const nibble = i < 16 ? i : 15 - (i - 16);
    const q = nibble + (i === 0 || i === 16 || i === 31 ? 16 : 0);
    assertEquals(a[i], 0.5 * (q - 16), `Q5_0 element ${i}`);
    assertEquals(b[i], 0.25 * q - 2, `Q5_1 element ${i}`);
  }
  // By hand: element 0 = 0.5·(16 − 16) = 0; element 16 (high nibble 15, fifth bit) = 0.5·15;
  // element 31 (high nibble 0, fifth bit) in Q5_1 = 0.25·16 − 2.
  assertEquals([a[0], a[16], b[31]], [0, 7.5, 2]);
});

Deno.test("IQ4_NL levels: 16 increasing int8 values, the table's bytes, read by nibble in Q4_0's order", async () => {
  const words = await loadQuantTable(IQ4_NL_TABLE);
  assertEquals(IQ4_NL_VALUES.length, 16);
  for (let i = 0; i < 16; i++) {
    const v = IQ4_NL_VALUES[i]!;
    assert(Number.isInteger(v) && v >= -128 && v <= 127, `level ${i} = ${v}`);
    if (i > 0) assert(v > IQ4_NL_VALUES[i - 1]!, `levels increase at ${i}`);
    // The GPU table: byte i of the 4 little-endian words, as int8.
    const word = words[i >> 2]!;
    assertEquals((word << (24 - 8 * (i & 3))) >> 24, v, `table byte ${i}`);
  }
  const b = new Uint8Array(18);
  [b[0], b[1]] = [F16_HALF & 0xff, F16_HALF >> 8];
  for (let i = 0; i < 16; i++) b[2 + i] = (15 - i) | (i << 4);
  const got = decodeAll(IQ4_NL, b);
  for (let i = 0; i < 16; i++) {
    assertEquals([got[i], got[16 + i]], [0.5 * IQ4_NL_VALUES[15 - i]!, 0.5 * IQ4_NL_VALUES[i]!]);
  }
});

Deno.test("IQ4_XS: 6-bit sub-block scales from scales_l nibbles and scales_h bit pairs", () => {
  const b = new Uint8Array(136);
  [b[0], b[1]] = [F16_QUARTER & 0xff, F16_QUARTER >> 8];
  // Scales 0, 1, 17, 32, 33, 47, 62, 63: low nibbles 0 1 1 0 1 15 14 15, high pairs 0 0 1 2 2 2 3 3.
  const scales = [0, 1, 17, 32, 33, 47, 62, 63];
  b.set([0x10, 0x01, 0xf1, 0xfe], 4);
  const high = 0b11_11_10_10_10_01_00_00;
  [b[2], b[3]] = [high & 0xff, high >> 8];
  // Sub-block j: every nibble j (low) and 15 − j (high).
  for (let j = 0; j < 8; j++) b.fill(j | ((15 - j) << 4), 8 + 16 * j, 24 + 16 * j);
  const got = decodeAll(IQ4_XS, b);
  for (let j = 0; j < 8; j++) {
    const dl = 0.25 * (scales[j]! - 32);
    for (let l = 0; l < 16; l++) {
      assertEquals(got[32 * j + l], dl * IQ4_NL_VALUES[j]!, `element ${32 * j + l}`);
      assertEquals(got[32 * j + 16 + l], dl * IQ4_NL_VALUES[15 - j]!, `element ${32 * j + 16 + l}`);
    }
  }
});

Deno.test("MXFP4: E8M0 scale 2^(e − 127), E2M1 codes as the OCP MX spec lists them", () => {
  // E2M1 magnitudes of codes 0..7 (OCP Microscaling spec v1.0, table of FP4 values).
  const e2m1 = [0, 0.5, 1, 1.5, 2, 3, 4, 6];
  for (const e of [127, 130, 100]) {
    const b = new Uint8Array(17);
    b[0] = e;
    for (let i = 0; i < 16; i++) b[1 + i] = i | ((15 - i) << 4);
    const got = decodeAll(MXFP4, b);
    const value = (code: number) => (code & 8 ? -1 : 1) * e2m1[code & 7]! * 2 ** (e - 127) + 0;
    for (let i = 0; i < 16; i++) {
      assertEquals([got[i], got[16 + i]], [value(i), value(15 - i)], `e ${e}, byte ${i}`);
    }
  }
});

for (const f of FORMATS) {
  Deno.test(`${f.type}: random blocks are well-formed, weights within about ±1, seeded`, () => {
    const make = (seed: number) => {
      let s = seed;
      const next = () => {
        s ^= s << 13;
        s ^= s >>> 17;
        s ^= s << 5;
        return s >>> 0;
      };
      const bytes = new Uint8Array(64 * f.blockBytes);
      for (let b = 0; b < 64; b++) f.randomBlock(bytes, b * f.blockBytes, next);
      return bytes;
    };
    const bytes = make(7);
    assertEquals(bytes, make(7));
    const w = decodeAll(f, bytes);
    let amax = 0, nonzero = 0;
    for (const v of w) {
      assert(Number.isFinite(v));
      amax = Math.max(amax, Math.abs(v));
      if (v !== 0) nonzero++;
    }
    assert(amax <= 1.01 && amax >= 0.25, `${f.type}: max |w| ${amax}`);
    assert(nonzero > w.length * 0.8, `${f.type}: ${nonzero} of ${w.length} nonzero`);
  });
}
