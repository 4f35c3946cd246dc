import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { seeded } from "../../../test/support/kernel_harness.ts";
import {
  dequantize,
  QUANT_FORMATS,
  QUANT_TYPES,
  quantFormat,
  quantize,
  quantizedBytes,
  quantTypeOfGgml,
} from "./registry.ts";
import { packScaleMins, scaleMin } from "./kscales.ts";
import { loadQuantTables } from "./tables.ts";

// Tabled formats decode from their tables' data files.
await loadQuantTables();

Deno.test("block geometry matches ggml: elements and bytes per block", () => {
  const geometry = QUANT_TYPES.map((
    t,
  ) => [t, QUANT_FORMATS[t].blockSize, QUANT_FORMATS[t].blockBytes]);
  assertEquals(geometry, [
    ["Q8_0", 32, 34],
    ["Q4_0", 32, 18],
    ["Q4_1", 32, 20],
    ["Q4_K", 256, 144],
    ["Q5_K", 256, 176],
    ["Q6_K", 256, 210],
    ["Q5_0", 32, 22],
    ["Q5_1", 32, 24],
    ["IQ4_NL", 32, 18],
    ["IQ4_XS", 256, 136],
    ["MXFP4", 32, 17],
    ["Q2_K", 256, 84],
    ["Q3_K", 256, 110],
    ["TQ1_0", 256, 54],
    ["TQ2_0", 256, 66],
    ["IQ2_XXS", 256, 66],
    ["IQ2_XS", 256, 74],
    ["IQ2_S", 256, 82],
    ["IQ3_XXS", 256, 98],
    ["IQ3_S", 256, 110],
    ["IQ1_S", 256, 50],
    ["IQ1_M", 256, 56],
  ]);
  assertEquals(QUANT_TYPES.map((t) => quantTypeOfGgml(QUANT_FORMATS[t].ggmlType)), QUANT_TYPES);
  assertEquals(quantizedBytes("Q6_K", 512), 420);
});

/** A block of `size` zero bytes with little-endian f16 bit patterns written at the given offsets. */
function block(size: number, halves: Record<number, number>): Uint8Array {
  const b = new Uint8Array(size);
  for (const [at, h] of Object.entries(halves)) [b[+at], b[+at + 1]] = [h & 0xff, h >> 8];
  return b;
}

const F16_ONE = 0x3c00, F16_HALF = 0x3800, F16_QUARTER = 0x3400, F16_TWO = 0x4000;
const F16_MINUS_ONE = 0xbc00;

Deno.test("Q8_0: d at byte 0, int8 element i at byte 2 + i (negative and -128 included)", () => {
  const b = block(34, { 0: F16_HALF });
  for (let i = 0; i < 32; i++) b[2 + i] = (i * 8 - 128) & 0xff;
  const got = dequantize("Q8_0", b, 32);
  for (let i = 0; i < 32; i++) assertEquals(got[i], 0.5 * (i * 8 - 128), `element ${i}`);
});

Deno.test("Q4_0 and Q4_1: element i < 16 is the low nibble of byte i, element i+16 the high", () => {
  const q40 = block(18, { 0: F16_TWO });
  const q41 = block(20, { 0: F16_QUARTER, 2: F16_MINUS_ONE });
  for (let i = 0; i < 16; i++) q40[2 + i] = q41[4 + i] = i | ((15 - i) << 4);
  const a = dequantize("Q4_0", q40, 32), b = dequantize("Q4_1", q41, 32);
  for (let i = 0; i < 16; i++) {
    assertEquals([a[i], a[16 + i]], [2 * (i - 8), 2 * (7 - i)], `Q4_0 ${i}`);
    assertEquals([b[i], b[16 + i]], [0.25 * i - 1, 0.25 * (15 - i) - 1], `Q4_1 ${i}`);
  }
});

// Sub-block scales and mins with high bits set, and their packed bytes worked out by hand:
// bytes 0..3 = sc[j] | (sc[j+4] >> 4) << 6, bytes 4..7 = mn[j] | (mn[j+4] >> 4) << 6,
// bytes 8..11 = (sc[j+4] & 15) | (mn[j+4] & 15) << 4.
const SC = [1, 2, 3, 4, 17, 33, 48, 63], MN = [5, 6, 7, 8, 21, 34, 50, 62];
const PACKED = [65, 130, 195, 196, 69, 134, 199, 200, 81, 33, 32, 239];

Deno.test("K-quant 6-bit scale packing: hand-packed bytes unpack to every (scale, min)", () => {
  const bytes = Uint8Array.from(PACKED);
  assertEquals(
    [0, 1, 2, 3, 4, 5, 6, 7].map((j) => scaleMin(bytes, 0, j)),
    SC.map((s, j) => [s, MN[j]]),
  );
  const packed = new Uint8Array(12);
  packScaleMins(packed, 0, SC, MN);
  assertEquals([...packed], PACKED);
});

for (const type of ["Q4_K", "Q5_K"] as const) {
  Deno.test(`${type}: sub-block order, nibble halves${type === "Q5_K" ? ", qh bits" : ""} and scales`, () => {
    const high = type === "Q5_K";
    const b = block(high ? 176 : 144, { 0: F16_ONE, 2: F16_HALF });
    b.set(PACKED, 4);
    const qs = high ? 48 : 16;
    // Byte l of chunk p: low nibble l & 15 (sub-block 2p), high nibble (l + p) & 15 (2p + 1).
    for (let p = 0; p < 4; p++) {
      for (let l = 0; l < 32; l++) b[qs + 32 * p + l] = (l & 15) | (((l + p) & 15) << 4);
    }
    if (high) { for (let l = 0; l < 32; l++) b[16 + l] = (l * 37) & 0xff; }
    const got = dequantize(type, b, 256);
    for (let j = 0; j < 8; j++) {
      for (let l = 0; l < 32; l++) {
        const nibble = j % 2 === 0 ? l & 15 : (l + (j >> 1)) & 15;
        const q = nibble + (high && ((l * 37) & 0xff) & (1 << j) ? 16 : 0);
        assertEquals(got[32 * j + l], SC[j]! * q - 0.5 * MN[j]!, `element ${32 * j + l}`);
      }
    }
    // Spot values worked out by hand: element 0 (j 0, q 0) = 1·1·0 − 0.5·5; element 255 (j 7,
    // l 31: high nibble (31 + 3) & 15 = 2; qh[31] = 31·37 & 255 = 0b01111011, bit 7 clear)
    // = 63·2 − 0.5·62; element 223 (j 6, l 31: low nibble 15, bit 6 set in Q5_K) = 48·q − 25.
    assertEquals([got[0], got[255], got[223]], [-2.5, 95, 48 * (high ? 31 : 15) - 25]);
  });
}

Deno.test("Q6_K: ql nibbles, qh bit pairs, int8 scales per 16 and d at byte 208", () => {
  const b = block(210, { 208: F16_HALF });
  for (let j = 0; j < 16; j++) b[192 + j] = (j - 8) & 0xff;
  // Half 1, l = 3: ql byte 64 + 32 + 3 holds elements 128+32+3 (low) and 128+96+3 (high);
  // qh byte 128 + 32 + 3 = 0b11100100 gives them 2-bit highs 1 and 3, element 128+64+3 gets 2.
  b[64 + 32 + 3] = 0x5a;
  b[128 + 32 + 3] = 0xe4;
  const got = dequantize("Q6_K", b, 256);
  const expected = Array.from({ length: 256 }, (_, e) => 0.5 * ((e >> 4) - 8) * -32);
  expected[163] = 0.5 * 2 * ((10 | (1 << 4)) - 32); // -6
  expected[195] = 0.5 * 4 * ((0 | (2 << 4)) - 32); // 0
  expected[227] = 0.5 * 6 * ((5 | (3 << 4)) - 32); // 63
  assertEquals(got.map((v) => v + 0), Float64Array.from(expected, (v) => v + 0)); // -0 as 0
  assertEquals([got[0], got[163], got[227]], [128, -6, 63]);
});

/**
 * Round-trip bounds: relative RMS error over the matrix, and max error per block vs amax. Q5:
 * half a step. IQ4_NL: half its widest level gap (12/127) or the 14/127 its top level falls short
 * of −127; IQ4_XS adds half a step of its 6-bit sub-block scales (1/64). MXFP4: half E2M1's
 * widest gap (4 to 6) at a power-of-two scale that can be a third of amax.
 */
const BOUNDS: Record<string, { rms: number; maxPerAmax: number }> = {
  Q8_0: { rms: 0.006, maxPerAmax: 0.5 / 127 + 1e-3 },
  Q4_0: { rms: 0.08, maxPerAmax: 1 / 8 + 1e-3 },
  Q4_1: { rms: 0.08, maxPerAmax: 1 / 15 + 1e-3 },
  Q4_K: { rms: 0.065, maxPerAmax: 2 / 15 },
  Q5_K: { rms: 0.035, maxPerAmax: 2 / 31 },
  Q6_K: { rms: 0.018, maxPerAmax: 2 / 32 },
  Q5_0: { rms: 0.035, maxPerAmax: 1 / 16 + 1e-3 },
  Q5_1: { rms: 0.035, maxPerAmax: 1 / 31 + 1e-3 },
  IQ4_NL: { rms: 0.08, maxPerAmax: 14 / 127 + 1e-3 },
  IQ4_XS: { rms: 0.08, maxPerAmax: 14 / 127 + 1 / 64 + 1e-3 },
  MXFP4: { rms: 0.13, maxPerAmax: 1 / 3 + 1e-3 },
  Q2_K: { rms: 0.24, maxPerAmax: 0.4 },
  Q3_K: { rms: 0.14, maxPerAmax: 0.26 },
  // Ternary: measured 0.53 (Gaussian rows); each weight within d/2 of its value, d = amax in f16.
  TQ1_0: { rms: 0.56, maxPerAmax: 0.5 * (1 + 2 ** -10) },
  TQ2_0: { rms: 0.56, maxPerAmax: 0.5 * (1 + 2 ** -10) },
};

for (const type of QUANT_TYPES.filter((t) => QUANT_FORMATS[t].encode !== undefined)) {
  Deno.test(`${type}: quantize then dequantize stays within its error bounds`, () => {
    const { blockSize } = quantFormat(type);
    const [rows, cols] = [5, 2 * 256];
    // Rows of very different magnitude, so per-block scales matter.
    const values = Float32Array.from(
      seeded(11, rows * cols),
      (v, i) => v * 10 ** (Math.floor(i / cols) - 2),
    );
    values.fill(0, 0, blockSize); // an all-zero block
    values.fill(-0.75, cols, cols + blockSize); // a constant negative block
    const bytes = quantize(type, values, rows, cols);
    assertEquals(bytes.byteLength, quantizedBytes(type, rows * cols));
    const got = dequantize(type, bytes, rows * cols);
    for (let i = 0; i < blockSize; i++) assert(got[i] === 0, "zero block");
    for (let r = 0; r < rows; r++) {
      let se = 0, ss = 0;
      for (let i = r * cols; i < (r + 1) * cols; i++) {
        [se, ss] = [se + (got[i]! - values[i]!) ** 2, ss + values[i]! ** 2];
      }
      assert(
        Math.sqrt(se / ss) <= BOUNDS[type]!.rms,
        `${type} row ${r}: relative RMS ${Math.sqrt(se / ss)}`,
      );
    }
    for (let b0 = 0; b0 < values.length; b0 += blockSize) {
      let amax = 0, worst = 0;
      for (let i = b0; i < b0 + blockSize; i++) {
        amax = Math.max(amax, Math.abs(values[i]!));
        worst = Math.max(worst, Math.abs(got[i]! - values[i]!));
      }
      assert(
        worst <= BOUNDS[type]!.maxPerAmax * amax,
        `${type} block at ${b0}: max error ${worst} vs amax ${amax}`,
      );
    }
  });
}

function assertInvalid(fn: () => unknown, includes: string): void {
  try {
    fn();
  } catch (e) {
    assert(e instanceof EngineError, String(e));
    assertEquals(e.type, "InvalidArgument");
    assert(e.message.includes(includes), e.message);
    return;
  }
  throw new Error(`no error thrown (expected one mentioning ${includes})`);
}

Deno.test("bad input: unknown type, partial blocks, wrong byte counts, bad rows, non-finite values", () => {
  assertInvalid(() => quantFormat("Q7_K"), "unknown quantization type");
  assertInvalid(() => dequantize("F16", new Uint8Array(64), 32), "unknown quantization type");
  assertInvalid(() => quantTypeOfGgml(1), "not a supported");
  assertInvalid(() => dequantize("Q8_0", new Uint8Array(34), 33), "whole number");
  assertInvalid(() => dequantize("Q8_0", new Uint8Array(35), 32), "got 35");
  assertInvalid(() => dequantize("Q6_K", new Uint8Array(210), 512), "got 210");
  assertInvalid(() => quantize("Q4_K", new Float32Array(576), 1, 576), "row length 576");
  assertInvalid(() => quantize("Q4_0", new Float32Array(40), 1, 40), "row length 40");
  assertInvalid(() => quantize("Q4_0", new Float32Array(64), 3, 32), "not a [3, 32] matrix");
  assertInvalid(
    () => quantize("Q8_0", Float32Array.of(...new Array(31).fill(0), NaN), 1, 32),
    "not finite",
  );
  assertInvalid(() => quantize("Q8_0", new Float32Array(32).fill(1e6), 1, 32), "exceeds");
  assertInvalid(() => quantize("IQ2_XXS", new Float32Array(256), 1, 256), "no quantizer");
});
