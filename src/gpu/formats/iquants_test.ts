/**
 * The i-quants' shared parts (`iquants.ts`): the sign rule, the grid tables as the formats
 * declare them, and random blocks. Their decoders against ggml: `ggml_fixtures_test.ts` (and,
 * dev-only, `bench/peers/iq_blocks_test.ts` on random blocks).
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { dequantize, QUANT_FORMATS, type QuantType } from "./registry.ts";
import { iqSigns } from "./iquants.ts";
import { randomBlocks } from "./random_blocks.ts";
import { loadQuantTable, loadQuantTables } from "./tables.ts";

const IQ_TYPES: QuantType[] = ["IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M"];

await loadQuantTables(IQ_TYPES);

Deno.test("i-quant sign codes: 7 bits kept, the eighth makes the number of minus signs even", () => {
  const popcount = (v: number) => [...v.toString(2)].filter((c) => c === "1").length;
  for (let code = 0; code < 128; code++) {
    const s = iqSigns(code);
    assertEquals(s & 127, code);
    assertEquals(popcount(s) % 2, 0, `code ${code}`);
  }
  assertEquals(iqSigns(0x80 | 3), 3, "bits above the 7 are ignored");
});

Deno.test("i-quant grids: each format's table, its length, and the values its entries hold", async () => {
  const tables = IQ_TYPES.map((
    t,
  ) => [t, QUANT_FORMATS[t].table?.name, QUANT_FORMATS[t].table?.words]);
  assertEquals(tables, [
    ["IQ2_XXS", "iq2xxs", 512],
    ["IQ2_XS", "iq2xs", 1024],
    ["IQ2_S", "iq2s", 2048],
    ["IQ3_XXS", "iq3xxs", 256],
    ["IQ3_S", "iq3s", 512],
    ["IQ1_S", "iq1s", 4096],
    ["IQ1_M", "iq1s", 4096],
  ]);
  const bytes = async (t: QuantType) => {
    const words = await loadQuantTable(QUANT_FORMATS[t].table!);
    return new Set(new Uint8Array(words.buffer, words.byteOffset, words.byteLength));
  };
  // ggml's grids: the 2-bit ones hold 3 magnitudes, the 3-bit ones 8, iq1s signed −1, 0, 1.
  for (const t of ["IQ2_XXS", "IQ2_XS", "IQ2_S"] as const) {
    assertEquals((await bytes(t)).size, 3, t);
  }
  for (const t of ["IQ3_XXS", "IQ3_S"] as const) assertEquals((await bytes(t)).size, 8, t);
  assertEquals([...await bytes("IQ1_S")].sort((a, b) => a - b), [0, 1, 255]);
});

for (const type of IQ_TYPES) {
  Deno.test(`${type}: random blocks decode finite, within ±1, of both signs`, () => {
    const f = QUANT_FORMATS[type];
    const w = dequantize(type, randomBlocks(type, 64 * f.blockSize, 7), 64 * f.blockSize);
    let amax = 0, negative = 0;
    for (const v of w) {
      assert(Number.isFinite(v) && Math.abs(v) <= 1, `${v}`);
      amax = Math.max(amax, Math.abs(v));
      if (v < 0) negative++;
    }
    assert(amax > 0.1, `largest weight ${amax}: the scale is too small`);
    assert(negative > w.length / 4 && negative < (3 * w.length) / 4, `${negative} negative`);
  });
}

Deno.test("i-quant decoders refuse a missing or wrong-length table", () => {
  const f = QUANT_FORMATS.IQ2_XXS;
  const out = new Float64Array(256);
  for (const table of [undefined, new Uint32Array(511)]) {
    try {
      f.decode(new Uint8Array(66), 0, out, 0, table);
      throw new Error("decoded without its table");
    } catch (e) {
      assert(e instanceof EngineError && e.type === "InvalidArgument", String(e));
      assert(e.message.includes("iq2xxs"), e.message);
    }
  }
});
