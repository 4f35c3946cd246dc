/**
 * Each registered format (the block-quantized ones and the float ones of `registry.ts`)
 * against the contract in `format.ts`: its registry entry and file names, and its WGSL
 * fragment's geometry, functions and table binding, composed into both product kernels (the
 * kernels' GPU tests in `../kernels/product/matvec_test.ts`, and for the float formats
 * `../kernels/linear_test.ts`, check what the fragment computes).
 */
import { deepStrictEqual as assertEquals, ok } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { shaderFile, shaderSource } from "../shader.ts";
import { QUANT_FORMATS, QUANT_TYPES } from "./registry.ts";
import { FLOAT_FORMATS } from "./registry.ts";
import { loadQuantTable, parseQuantTable } from "./tables.ts";

const SIGNATURES = [
  "fn load_slice(b: u32, s: u32) -> Raw",
  "fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8>",
  "fn group_elem(s: u32, g: u32) -> u32",
];

const FORMATS = [
  ...QUANT_TYPES.map((type) => [type, QUANT_FORMATS[type]] as const),
  ...Object.values(FLOAT_FORMATS).map((f) => [f.type, f] as const),
];

for (const [type, f] of FORMATS) {
  Deno.test(`${type}: registry entry, fragment geometry, functions and table binding`, async () => {
    assertEquals([f.type, f.fragment], [type, type.toLowerCase()]);
    ok(f.blockSize === 32 || f.blockSize === 256, `block size ${f.blockSize}`);
    const text = await shaderFile(`formats/${f.fragment}.wgsl`);
    const constant = (name: string) =>
      Number(new RegExp(`^const ${name}: u32 = (\\d+)u;$`, "m").exec(text)?.[1]);
    assertEquals([constant("BLOCK_ELEMS"), constant("BLOCK_BYTES")], [f.blockSize, f.blockBytes]);
    for (const sig of SIGNATURES) ok(text.includes(`${sig} {`), `${type}: defines ${sig}`);
    const own = [...text.matchAll(/^fn (\w+)\(/gm)].map((m) => m[1]!)
      .filter((name) => !["load_slice", "decode", "group_elem"].includes(name));
    const foreign = own.filter((name) => !name.startsWith(`${f.fragment}_`));
    assertEquals(foreign, [], `${type}: helpers must be prefixed ${f.fragment}_`);
    const bindings = [...text.matchAll(/@binding\((\d+)\)/g)].map((m) => Number(m[1]));
    assertEquals(bindings, f.table ? [7] : [], `${type}: bindings`);
    for (const kernel of ["product/matvec", "product/gemm"]) {
      const composed = await shaderSource(`${kernel}:format=${f.fragment}`);
      ok(composed.includes(`const BLOCK_BYTES: u32 = ${f.blockBytes}u;`), kernel);
    }
  });
}

function refuses(fn: () => unknown, includes: string): void {
  try {
    fn();
  } catch (e) {
    ok(e instanceof EngineError && e.type === "InvalidArgument", String(e));
    ok(e.message.includes(includes), e.message);
    return;
  }
  throw new Error(`no error (expected one mentioning ${includes})`);
}

Deno.test("table data files: u32 words of the declared length, malformed or missing ones refused", async () => {
  const table = { name: "t", words: 3 };
  assertEquals(
    [...parseQuantTable(table, '{"source":"test","words":[0,1,4294967295]}')],
    [0, 1, 4294967295],
  );
  refuses(() => parseQuantTable(table, "{"), "tables/t.json: not JSON");
  refuses(() => parseQuantTable(table, '{"words":3}'), "no `words` array");
  refuses(() => parseQuantTable(table, '{"words":[1,2]}'), "2 words, the format expects 3");
  refuses(() => parseQuantTable(table, '{"words":[1,2,-1]}'), "word 2 (-1) is not a u32");
  refuses(() => parseQuantTable(table, '{"words":[1,2.5,3]}'), "word 1 (2.5)");
  refuses(() => parseQuantTable(table, '{"words":[1,2,4294967296]}'), "is not a u32");
  try {
    await loadQuantTable({ name: "no_such_table", words: 1 });
    throw new Error("a missing table loaded");
  } catch (e) {
    ok(String(e).includes("shaders/tables/no_such_table.json"), String(e));
  }
});

Deno.test("packed table data files: levels and bit-packed codes expand to the words, bad ones refused", () => {
  const table = { name: "p", words: 2 };
  // 8 bytes, 2-bit codes 0,1,2,0, 2,2,1,0 → bytes 8,25,255,8, 255,255,25,8 (level −1 is 255).
  const codes = btoa(String.fromCharCode(0b00_10_01_00, 0b00_01_10_10));
  const file = (levels: unknown, c: unknown) => JSON.stringify({ levels, codes: c });
  assertEquals(
    [...parseQuantTable(table, file([8, 25, -1], codes))],
    [0x08ff1908, 0x0819ffff],
  );
  refuses(() => parseQuantTable(table, file([8], codes)), "2 to 256 bytes");
  refuses(() => parseQuantTable(table, file([8, 256], codes)), "level 1 (256) is not a byte");
  refuses(() => parseQuantTable(table, file([8, 25, -1], "%%")), "not base64");
  refuses(() => parseQuantTable(table, file([8, 25, -1], btoa("\x24"))), "1 bytes of codes");
  const three = btoa(String.fromCharCode(0b00_00_00_11, 0));
  refuses(() => parseQuantTable(table, file([8, 25, -1], three)), "code 0 (3) names no level");
});
