/**
 * Kiln's i-quant decoders against ggml's `dequantize_row_*` on random blocks (`randomBlock`):
 * every bit random but the block scale, so every grid index, sign code, sub-block scale and
 * shift sign occurs, including patterns ggml's quantizer never writes (the committed fixtures
 * hold only quantizer output). Also re-reads the committed grid tables out of ggml. Dev-only
 * (not in `npm test`): needs the peers' packages (tools/peers).
 *
 *   node_modules/.bin/deno test -A tools/peers/iq_blocks_test.ts
 */
import { ok } from "node:assert/strict";
import { dequantize, QUANT_FORMATS, type QuantType } from "../../src/gpu/formats/registry.ts";
import { randomBlocks } from "../../src/gpu/formats/random_blocks.ts";
import { loadQuantTables } from "../../src/gpu/formats/tables.ts";
import { openGgml } from "./ggml.ts";

const TYPES: QuantType[] = [
  "IQ2_XXS",
  "IQ2_XS",
  "IQ2_S",
  "IQ3_XXS",
  "IQ3_S",
  "IQ1_S",
  "IQ1_M",
];
const BLOCKS = 2048;

Deno.test("i-quants: Kiln decodes random blocks exactly as ggml does", async () => {
  await loadQuantTables(TYPES);
  const ggml = await openGgml();
  try {
    for (const type of TYPES) {
      const f = QUANT_FORMATS[type];
      const t = ggml.typeNamed(type);
      ok(
        t !== undefined && t.id === f.ggmlType && t.blockBytes === f.blockBytes,
        type,
      );
      const count = BLOCKS * f.blockSize;
      const bytes = randomBlocks(type, count, f.ggmlType);
      const want = ggml.dequantize(t, bytes, count);
      const got = dequantize(type, bytes, count);
      for (let i = 0; i < count; i++) {
        ok(
          Object.is(got[i], want[i]),
          `${type} ${i}: Kiln ${got[i]}, ggml ${want[i]}`,
        );
      }
    }
  } finally {
    ggml.close();
  }
});

Deno.test("i-quant grid tables: the committed files are what ggml decodes", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("../fixtures/iq_tables.ts", import.meta.url).pathname,
      "--check",
    ],
  }).output();
  ok(out.success, new TextDecoder().decode(out.stderr));
});
