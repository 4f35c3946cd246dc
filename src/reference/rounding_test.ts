/**
 * llama.cpp's Q8_0 input rounding (test-only, `reference_rounding.ts`): each block of 32 becomes
 * round(x / d) · d with d = max |x| / 127 held in f16; rows that are not whole blocks and weight
 * types whose rounding is not modelled are refused. (End to end: gpt-oss's MXFP4_MOE file.)
 */
import { deepStrictEqual, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { f16ToNumber, numberToF16 } from "../gpu/dtype.ts";
import { llamaCppRoundedInputs, roundQ8_0 } from "./rounding.ts";
import type { ModelWeights, WeightInfo } from "../model/weights.ts";

Deno.test("Q8_0 input rounding: 32-blocks to 127 levels of an f16 step", () => {
  // max 127: step 1, values rounded half away from zero.
  const a = Float64Array.from({ length: 32 }, (_, i) => i === 0 ? -127 : (i - 16) * 0.75);
  deepStrictEqual(
    [...roundQ8_0(a, 32)],
    [...a].map((v) => Math.sign(v) * Math.round(Math.abs(v)) + 0),
  );
  // max 100: the step 100/127 rounded to f16, each value a whole number of steps; a second
  // block of zeros stays zero.
  const b = Float64Array.from({ length: 64 }, (_, i) => i < 32 ? Math.sin(i) * 100 : 0);
  b[5] = 100;
  const step = f16ToNumber(numberToF16(Math.fround(100 / 127)));
  const got = roundQ8_0(b, 64);
  for (let i = 0; i < 32; i++) {
    const q = got[i]! / step;
    equal(Math.abs(q - Math.round(q)) < 1e-9, true, `${i}`);
    equal(Math.abs(got[i]! - b[i]!) <= step / 2 + 1e-3, true, `${i}`);
  }
  deepStrictEqual([...got.subarray(32)], Array(32).fill(0));
  throws(() => roundQ8_0(new Float64Array(48), 48), (e: unknown) => e instanceof EngineError);
});

Deno.test("Q8_0 input rounding: where llama.cpp rounds, and types it cannot model", () => {
  const t = (name: string, dtype: string): WeightInfo =>
    ({ name, dtype, shape: [32, 32] }) as unknown as WeightInfo;
  const model = (o: string, lm: string): ModelWeights<WeightInfo> => ({
    embed: t("embed", "Q8_0"),
    norm: t("norm", "f32"),
    lmHead: t("lm_head", lm),
    layers: [{ o: t("o", o), qkv: t("qkv", "MXFP4") }],
  });
  deepStrictEqual([...llamaCppRoundedInputs(model("f16", "Q8_0"))].sort(), [
    "k",
    "lmHead",
    "q",
    "v",
  ]);
  throws(
    () => llamaCppRoundedInputs(model("Q4_K", "f32")),
    (e: unknown) => e instanceof EngineError && e.message.includes("tensor o"),
  );
});
