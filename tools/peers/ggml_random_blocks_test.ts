/**
 * Every registered block decoder against ggml's own `dequantize_row_*` on random blocks
 * (`randomBlock`, which reaches bit patterns ggml's quantizer never writes) and on blocks of
 * all-random bytes (NaN and infinite scales too), through the dev-only FFI peer `ggml.ts`: every
 * element equal after rounding to f32 (a zero's sign included, NaN any NaN). The committed
 * fixtures (`test/fixtures/ggml`) cover quantizer-made blocks in `npm test`; this covers the
 * rest. Dev-only (not in `npm test`): needs the peers' packages (tools/peers).
 *
 *   node_modules/.bin/deno test -A tools/peers/ggml_random_blocks_test.ts
 */
import { strictEqual as equal } from "node:assert/strict";
import { QUANT_FORMATS, QUANT_TYPES } from "../../src/gpu/formats/registry.ts";
import { loadQuantTable } from "../../src/gpu/formats/tables.ts";
import { openGgml } from "./ggml.ts";

const FORMATS = QUANT_TYPES.map((t) => QUANT_FORMATS[t]);
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
      const table = f.table && await loadQuantTable(f.table);
      equal(t.name.toUpperCase(), f.type);
      equal(t.blockSize, f.blockSize);
      equal(t.blockBytes, f.blockBytes);
      const next = rng(f.ggmlType * 7919);
      const bytes = new Uint8Array(BLOCKS * f.blockBytes);
      for (let b = 0; b < BLOCKS; b++) {
        f.randomBlock(bytes, b * f.blockBytes, next);
      }
      // And blocks of all-random bytes: any bit pattern (NaN and infinite scales included).
      const raw = new Uint8Array(BLOCKS * f.blockBytes);
      for (let i = 0; i < raw.length; i++) raw[i] = next() & 0xff;
      for (const data of [bytes, raw]) {
        const want = ggml.dequantize(t, data, BLOCKS * f.blockSize);
        const got = new Float64Array(want.length);
        for (let b = 0; b < BLOCKS; b++) {
          f.decode(data, b * f.blockBytes, got, b * f.blockSize, table);
        }
        let bad = 0, first = -1;
        for (let i = 0; i < want.length; i++) {
          const g = Math.fround(got[i]!), v = want[i]!;
          if (!Object.is(g, v) && !(isNaN(g) && isNaN(v)) && bad++ === 0) {
            first = i;
          }
        }
        equal(
          bad,
          0,
          `${bad} elements differ, first at ${first}: ${got[first]} vs ${want[first]}`,
        );
      }
    } finally {
      ggml.close();
    }
  });
}
