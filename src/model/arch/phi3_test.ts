/**
 * Phi-3 on its family fixture (`test/fixtures/families/phi3`: RoPE on 4 of 8 dims of each head;
 * q/k/v and gate/up each one stacked tensor): the HF folder and the GGUF agree with llama.cpp's
 * logits, the GPU forward with the float64 reference, full rotary moves the logits, and the
 * config's sliding window is ignored as llama.cpp ignores it.
 */
import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { parseConfig } from "../config.ts";
import { ReferenceModel } from "../reference_model.ts";
import {
  familyFixtureTests,
  fixtureCheckpoint,
  loadFixture,
  maxDiff,
} from "../../../test/support/family_fixture.ts";

familyFixtureTests("phi3", 1e-3, "q8_0");

async function hfConfig(): Promise<Record<string, unknown>> {
  return JSON.parse(
    await Deno.readTextFile(
      new URL("../../../test/fixtures/families/phi3/hf/config.json", import.meta.url),
    ),
  );
}

Deno.test("phi3: stacked tensors as one product each, partial rotary from HF and GGUF", async () => {
  for (const format of ["hf", "gguf"] as const) {
    const ck = await fixtureCheckpoint("phi3", format);
    equal(ck.config.rotaryDim, 4, format);
    const l = ck.weights.layers[1]!;
    deepStrictEqual(l.qkv!.shape, [64, 32]);
    deepStrictEqual(l.gateUp!.shape, [64, 32]);
    equal(l.q, undefined);
  }
  const base = await hfConfig();
  // The window is ignored, as llama.cpp ignores it (a window of 7 < 256 would otherwise be refused).
  equal(parseConfig({ ...base, sliding_window: 7, use_sliding_window: true }).arch, "phi3");
  for (const bad of [1.5, 0.1, 0, "half"]) {
    try {
      parseConfig({ ...base, partial_rotary_factor: bad });
      ok(false, `partial_rotary_factor ${bad} was accepted`);
    } catch (e) {
      ok(e instanceof EngineError && e.message.includes("config.partial_rotary_factor"), String(e));
    }
  }
});

Deno.test("phi3: full rotary moves the float64 logits", async () => {
  const fx = await loadFixture("phi3");
  const ck = await fixtureCheckpoint("phi3", "gguf");
  const ref = await ReferenceModel.load(ck.config, ck.weights);
  const { rotaryDim: _, ...full } = ck.config;
  const ablated = await ReferenceModel.load(full, ck.weights);
  const moved = maxDiff(ref.logits(fx.tokens), ablated.logits(fx.tokens));
  console.log(`  full rotary moves the logits by ${moved}`);
  ok(moved >= 0.1, `moved ${moved}`);
});
