/**
 * Kiln's block decoders against ggml's own `dequantize_row_*` on random blocks (`randomBlock`,
 * which reaches bit patterns ggml's quantizer never writes), through the dev-only FFI peer
 * `ggml.ts`: every element equal after rounding to f32. The committed fixtures
 * (`test/fixtures/ggml`) cover quantizer-made blocks in `npm test`; this covers the rest.
 * Dev-only (not in `npm test`): needs bench/peers' packages.
 *
 *   node_modules/.bin/deno test -A bench/peers/ggml_random_blocks_test.ts
 */
import { equal } from "node:assert/strict";
import type { QuantFormat } from "../../src/gpu/quant/format.ts";
import { Q2_K } from "../../src/gpu/quant/formats/q2_k.ts";
import { Q3_K } from "../../src/gpu/quant/formats/q3_k.ts";
import { TQ1_0 } from "../../src/gpu/quant/formats/tq1_0.ts";
import { TQ2_0 } from "../../src/gpu/quant/formats/tq2_0.ts";
import { openGgml } from "./ggml.ts";

const FORMATS: QuantFormat[] = [Q2_K, Q3_K, TQ1_0, TQ2_0];
const BLOCKS = 4096;

/** xorshift32 from `seed`. */
function rng(seed: number): () => number {
  let s = seed | 0 || 0x9e3779b9;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return s >>> 0;
  };
}

for (const f of FORMATS) {
  Deno.test(`${f.type}: ${BLOCKS} random blocks decode as ggml decodes them`, async () => {
    const ggml = await openGgml();
    try {
      const t = ggml.type(f.ggmlType)!;
      equal(t.name.toUpperCase(), f.type);
      equal(t.blockSize, f.blockSize);
      equal(t.blockBytes, f.blockBytes);
      const next = rng(f.ggmlType * 7919);
      const bytes = new Uint8Array(BLOCKS * f.blockBytes);
      for (let b = 0; b < BLOCKS; b++) f.randomBlock(bytes, b * f.blockBytes, next);
      // And blocks of all-random bytes: any bit pattern (NaN and infinite scales included).
      const raw = new Uint8Array(BLOCKS * f.blockBytes);
      for (let i = 0; i < raw.length; i++) raw[i] = next() & 0xff;
      for (const data of [bytes, raw]) {
        const want = ggml.dequantize(t, data, BLOCKS * f.blockSize);
        const got = new Float64Array(want.length);
        for (let b = 0; b < BLOCKS; b++) {
          f.decode(data, b * f.blockBytes, got, b * f.blockSize);
        }
        let bad = 0, first = -1;
        for (let i = 0; i < want.length; i++) {
          if (!Object.is(Math.fround(got[i]!), want[i]!) && !(isNaN(got[i]!) && isNaN(want[i]!))) {
            if (bad++ === 0) first = i;
          }
        }
        equal(bad, 0, `${bad} elements differ, first at ${first}: ${got[first]} vs ${want[first]}`);
      }
    } finally {
      ggml.close();
    }
  });
}
