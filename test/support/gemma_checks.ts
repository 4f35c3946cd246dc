/**
 * The checks Gemma 2's and Gemma 3's fixture tests share (`src/model/arch/gemma{2,3}_test.ts`):
 * both formats load to one config and one set of weights (HF norms `w` read as `1 + w`) with
 * Kiln's float64 reference within llama.cpp's GELU-table error of its logits, and the
 * ablations of what the two families have in common.
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import type { Checkpoint } from "../../src/model/checkpoint.ts";
import type { ModelConfig } from "../../src/model/config.ts";
import type { LayerStep } from "../../src/model/arch/mod.ts";
import { archOf } from "../../src/model/arch/mod.ts";
import type { ModelWeights, WeightInfo } from "../../src/model/weights.ts";
import { ReferenceModel } from "../../src/reference/model.ts";
import { tensorValues } from "../../src/reference/tensor_values.ts";
import { type Ablation, type FixtureFiles, maxAbsDiff } from "./family_fixture.ts";

/**
 * `hf` and `gguf` give one config (but dtype and EOS ids) and the same `norm` weights (HF's `w`
 * read as `1 + w`); the float64 reference on each is within `tol` of llama.cpp's logits.
 */
export async function sameAsLlamaCpp(
  fixture: FixtureFiles,
  hf: Checkpoint,
  gguf: Checkpoint,
  norm: (w: ModelWeights<WeightInfo>) => WeightInfo,
  tol: number,
): Promise<void> {
  const { dtype: _a, eosTokenIds: _b, ...fromHf } = hf.config;
  const { dtype: _c, eosTokenIds: _d, ...fromGguf } = gguf.config;
  deepStrictEqual(fromGguf, fromHf);
  // HF stores w, GGUF 1 + w: both load as 1 + w.
  deepStrictEqual(await tensorValues(norm(hf.weights)), await tensorValues(norm(gguf.weights)));
  for (const ck of [hf, gguf]) {
    const logits = (await ReferenceModel.load(ck.config, ck.weights)).logits(
      fixture.manifest.tokens,
    );
    const err = maxAbsDiff(logits, fixture.llamaCpp);
    console.log(`  ${ck.format}: float64 vs llama.cpp max|err| ${err.toExponential(2)}`);
    ok(err < tol, `${ck.format}: ${err}`);
  }
}

/** The float64 reference of `ck` with a config and a recipe of the test's. */
export interface Ablations {
  config: ModelConfig;
  recipe: readonly LayerStep[];
  /** The reference with `config` (default `ck`'s) and `testRecipe` (default its family's). */
  load(config?: ModelConfig, testRecipe?: readonly LayerStep[]): Promise<ReferenceModel>;
  /** The reference with `key` dropped from the config. */
  without(key: keyof ModelConfig): Promise<ReferenceModel>;
  /**
   * What Gemma 2 and 3 both turn off: the window, the embedding scale, the `1 + w` norm
   * weights, the post-attention and post-MLP norms, and GELU.
   */
  shared: Record<string, Ablation>;
}

/** The ablations of a Gemma fixture's HF checkpoint `ck`. */
export function gemmaAblations(fixture: FixtureFiles, ck: Checkpoint): Ablations {
  const config = ck.config, recipe = archOf(config).layer;
  const load = (c = config, testRecipe = recipe) =>
    ReferenceModel.load(c, ck.weights, { testRecipe });
  const without = (key: keyof ModelConfig) => {
    const { [key]: _, ...rest } = config;
    return load(rest as ModelConfig);
  };
  const withoutPostNorms = recipe.map((s) =>
    s.op === "o_proj_residual" || s.op === "mlp" ? { ...s, postNorm: false } : s
  );
  return {
    config,
    recipe,
    load,
    without,
    shared: {
      "the sliding window": () => without("slidingWindow"),
      "the embedding scale": () => without("embedScale"),
      "the (1 + w) norm weights": async () =>
        ReferenceModel.load(config, await fixture.hfAsStored()),
      "the post-attention and post-MLP norms": () => load(config, withoutPostNorms),
      "GELU (SiLU instead)": () =>
        load(config, recipe.map((s) => s.op === "mlp" ? { ...s, act: "silu" } : s)),
    },
  };
}
