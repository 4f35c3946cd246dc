/**
 * The float product formats (F32, F16, BF16): their codec is the element conversion of
 * `../../dtype.ts`, block for block, and their blocks are whole rows cut in 32s.
 */
import { deepStrictEqual as assertEquals, ok } from "node:assert/strict";
import { decodeWeights, encodeWeights, type WeightDtype } from "../dtype.ts";
import { FLOAT_FORMATS, productRowBytes, productTakes } from "./registry.ts";
import { EngineError } from "../../contract/errors.ts";

const VALUES = Array.from({ length: 96 }, (_, i) => Math.sin(i * 1.7) * 2 ** ((i % 9) - 4));

for (const dtype of Object.keys(FLOAT_FORMATS) as WeightDtype[]) {
  const f = FLOAT_FORMATS[dtype];
  Deno.test(`${f.type} format: encode and decode are the dtype's, 32 elements a block`, () => {
    const bytes = new Uint8Array((VALUES.length / 32) * f.blockBytes);
    for (let b = 0; b < VALUES.length / 32; b++) f.encode!(VALUES, 32 * b, bytes, b * f.blockBytes);
    assertEquals(bytes, encodeWeights(VALUES, dtype));
    const out = new Float64Array(VALUES.length);
    for (let b = 0; b < VALUES.length / 32; b++) f.decode(bytes, b * f.blockBytes, out, 32 * b);
    assertEquals(out, decodeWeights(bytes, dtype));
    let seed = 1;
    const next = () => (seed = Math.imul(seed, 1664525) + 1013904223) >>> 0;
    const random = new Uint8Array(f.blockBytes);
    f.randomBlock(random, 0, next);
    const values = decodeWeights(random, dtype);
    ok(values.every((v) => Math.abs(v) <= 1) && new Set(values).size > 16, `${values}`);
  });
}

Deno.test("float rows are whole 32-element blocks for the product kernels", () => {
  assertEquals(productRowBytes(FLOAT_FORMATS.f16, 96), 192);
  assertEquals(productRowBytes(FLOAT_FORMATS.f32, 64), 256);
  assertEquals([productTakes("bf16", 64), productTakes("bf16", 72), productTakes("Q4_K", 64)], [
    true,
    false,
    false,
  ]);
  try {
    productRowBytes(FLOAT_FORMATS.f32, 33);
    throw new Error("accepted 33");
  } catch (e) {
    ok(e instanceof EngineError && e.type === "InvalidArgument", String(e));
    ok(e.message.includes("F32: row length 33"), e.message);
  }
});
