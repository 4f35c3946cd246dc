/**
 * OLMo 2 on its family fixture (`test/fixtures/families/olmo2`): no pre-norms, the attention
 * and MLP outputs RMSNorm'd before their residual adds, q/k RMSNorm'd over the whole projection.
 * The HF folder and the GGUF agree with llama.cpp's logits, the GPU forward with the float64
 * reference, and each feature moves the logits: the post-norms and the q/k norm dropped (and
 * the q/k norm taken per head instead).
 */
import { type LayerStep } from "./mod.ts";
import { archOf } from "./mod.ts";
import { ReferenceModel } from "../../reference/model.ts";
import {
  type Ablation,
  checkAblations,
  familyFixtureTests,
} from "../../../test/support/family_fixture.ts";

const FIXTURE = familyFixtureTests("olmo2", 1e-3, "q8_0");

Deno.test("olmo2: dropping each norm moves the float64 logits", async () => {
  const ck = await FIXTURE.gguf();
  const recipe = archOf(ck.config).layer;
  const changed = (change: (s: LayerStep) => LayerStep | undefined): Ablation => (ck) =>
    ReferenceModel.load(ck.config, ck.weights, {
      testRecipe: recipe.flatMap((s) => change(s) ?? []),
    });
  await checkAblations(FIXTURE, ck, {
    "the q/k norm": changed((s) => s.op === "qk_norm" ? undefined : s),
    "the post-attention norm": changed((s) => s.op === "o_proj_residual" ? { op: s.op } : s),
    "the post-MLP norm": changed((s) => s.op === "mlp" ? { ...s, postNorm: false } : s),
  });
});
