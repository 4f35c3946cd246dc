/**
 * Every registered format's CPU dequantizer against ggml's own: `test/fixtures/ggml/<name>.json`
 * holds blocks quantized by ggml and ggml's `dequantize_row_*` of them (README there), and
 * `dequantize` must give the same f32 values bit for bit.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { dequantize, QUANT_FORMATS, QUANT_TYPES } from "./registry.ts";
import { loadQuantTables } from "./tables.ts";

interface GgmlFixture {
  type: string;
  ggml_type: number;
  block_size: number;
  block_bytes: number;
  rows: number;
  cols: number;
  blocks: string;
  values: string;
}

const DIR = new URL("../../../test/fixtures/ggml/", import.meta.url);

const base64 = (s: string): Uint8Array => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

/** The fixtures by Kiln's name for their type (ggml's, upper-cased). */
async function fixtures(): Promise<Map<string, GgmlFixture>> {
  const out = new Map<string, GgmlFixture>();
  for await (const entry of Deno.readDir(DIR)) {
    if (!entry.name.endsWith(".json")) continue;
    const f = JSON.parse(await Deno.readTextFile(new URL(entry.name, DIR))) as GgmlFixture;
    out.set(f.type.toUpperCase(), f);
  }
  return out;
}

const all = await fixtures();
await loadQuantTables(); // the i-quants' grids

Deno.test("every registered format has a ggml fixture, with the same ggml number and geometry", () => {
  for (const type of QUANT_TYPES) {
    const f = QUANT_FORMATS[type];
    const fx = all.get(type);
    assert(fx !== undefined, `${type}: no test/fixtures/ggml fixture`);
    assertEquals(
      [f.type, f.ggmlType, f.blockSize, f.blockBytes],
      [type, fx.ggml_type, fx.block_size, fx.block_bytes],
      type,
    );
  }
});

for (const type of QUANT_TYPES) {
  Deno.test(`${type}: dequantize equals ggml's dequantize_row bit for bit (as f32)`, () => {
    const fx = all.get(type);
    assert(fx !== undefined, `${type}: no fixture`);
    const count = fx.rows * fx.cols;
    const bytes = base64(fx.blocks);
    const want = new Float32Array(base64(fx.values).buffer);
    assertEquals(want.length, count);
    const got = Float32Array.from(dequantize(type, bytes, count), Math.fround);
    const wrong = [...want.keys()].filter((i) => !Object.is(got[i], want[i]));
    assertEquals(
      wrong.slice(0, 5).map((i) => ({ element: i, kiln: got[i], ggml: want[i] })),
      [],
      `${type}: ${wrong.length} of ${count} elements differ from ggml`,
    );
    assert(want.some((v) => v !== 0), "the fixture holds non-zero values");
  });
}
