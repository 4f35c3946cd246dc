/**
 * Llama 3's RoPE scaling as a GGUF carries it: per-frequency divisors in `rope_freqs.weight`.
 * The fixture's (`test/fixtures/families/llama3`) come from an original context of 16, not
 * Llama 3.x's 8192, so no `llama3` parameters Kiln could recover give them: they are used as
 * stored, as llama.cpp does, and the GGUF runs as llama.cpp runs it.
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import { ReferenceModel } from "../../reference/model.ts";
import { ropeInvFreq } from "../rope.ts";
import { checkAblations, familyFixtureTests } from "../../../test/support/family_fixture.ts";

const FIXTURE = familyFixtureTests("llama3", 1e-3, "q8_0");

Deno.test("llama3 GGUF: rope_freqs.weight used as stored, the same frequencies as HF's llama3 scaling", async () => {
  const gguf = await FIXTURE.gguf();
  const hf = await FIXTURE.hf();
  const s = gguf.config.ropeScaling;
  deepStrictEqual(s.type, "factors");
  deepStrictEqual(hf.config.ropeScaling.type, "llama3");
  const c = hf.config;
  const a = ropeInvFreq(c.headDim, c.ropeTheta, s);
  const b = ropeInvFreq(c.headDim, c.ropeTheta, c.ropeScaling);
  a.forEach((f, i) => ok(Math.abs(f - b[i]!) <= 1e-6 * b[i]!, `frequency ${i}: ${f} vs ${b[i]}`));
});

Deno.test("llama3: dropping the frequency factors moves the float64 logits", async () => {
  await checkAblations(FIXTURE, await FIXTURE.gguf(), {
    "rope_freqs": (ck) =>
      ReferenceModel.load({ ...ck.config, ropeScaling: { type: "default" } }, ck.weights),
  });
});
