/**
 * Gemma 3 on `test/fixtures/families/gemma3` (three layers: window 8 on layers 0 and 2 with their
 * own RoPE base 1e4, layer 1 global with 1e6; per-head q/k norms; no soft-caps): both formats
 * load to one config and one set of weights (HF norms `w` read as `1 + w`, the q/k norms too),
 * Kiln's float64 reference agrees with llama.cpp (within the 2.9e-3 that ggml's F16 GELU table
 * costs it), each feature moves the logits when turned off there, and the GPU forward (F32 and
 * Q4_K_M, both kernel paths) matches the reference.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import {
  checkAblations,
  familyFixture,
  fixtureGpuTests,
  maxAbsDiff,
} from "../../../test/support/family_fixture.ts";
import type { ModelConfig } from "../config.ts";
import { ReferenceModel } from "../../reference/model.ts";
import { tensorValues } from "../../reference/tensor_values.ts";
import { archOf, type LayerStep } from "./mod.ts";

const FIXTURE = familyFixture("gemma3");
const TOKENS = FIXTURE.manifest.tokens;
/** llama.cpp's GELU reads an F16 table: its logits are 2.9e-3 off an exact forward pass. */
const LLAMA_CPP_TOL = 5e-3;
const PROMPTS = [TOKENS, TOKENS.slice(0, 5), TOKENS.slice(7, 30)];

/** The recipe with the post-attention and post-MLP norms dropped. */
const WITHOUT_POST_NORMS = (steps: readonly LayerStep[]): LayerStep[] =>
  steps.map((s) => s.op === "o_proj_residual" || s.op === "mlp" ? { ...s, postNorm: false } : s);

Deno.test("gemma3: HF and GGUF give one config and weights; float64 matches llama.cpp", async () => {
  const hf = await FIXTURE.hf(), gguf = await FIXTURE.gguf();
  const c = hf.config;
  deepStrictEqual(
    [c.arch, c.slidingWindow, c.slidingLayers, c.ropeTheta, c.ropeLocalTheta, c.embedScale],
    ["gemma3", 8, [true, false, true], 1e6, 1e4, Math.sqrt(32)],
  );
  equal(c.attnSoftcap, undefined);
  equal(c.finalSoftcap, undefined);
  equal(c.attnScale, undefined, "query_pre_attn_scalar = head_dim: the default scale");
  const { dtype: _a, eosTokenIds: _b, ...fromHf } = c;
  const { dtype: _c, eosTokenIds: _d, ...fromGguf } = gguf.config;
  deepStrictEqual(fromGguf, fromHf);
  // HF stores w, GGUF 1 + w: both load as 1 + w.
  const norm = (w: typeof hf.weights) => tensorValues(w.layers[2]!.kNorm!);
  deepStrictEqual(await norm(hf.weights), await norm(gguf.weights));
  for (const ck of [hf, gguf]) {
    const logits = (await ReferenceModel.load(ck.config, ck.weights)).logits(TOKENS);
    const err = maxAbsDiff(logits, FIXTURE.llamaCpp);
    console.log(`  ${ck.format}: float64 vs llama.cpp max|err| ${err.toExponential(2)}`);
    ok(err < LLAMA_CPP_TOL, `${ck.format}: ${err}`);
  }
});

Deno.test("gemma3: each feature, turned off in the float64 reference, moves the logits", async () => {
  const ck = await FIXTURE.hf();
  const c = ck.config, recipe = archOf(c).layer;
  const load = (config = c, testRecipe = recipe) =>
    ReferenceModel.load(config, ck.weights, { testRecipe });
  const without = (key: keyof ModelConfig) => {
    const { [key]: _, ...rest } = c;
    return load(rest as ModelConfig);
  };
  await checkAblations(FIXTURE, ck, {
    "the sliding window": () => without("slidingWindow"),
    "the local RoPE base": () => without("ropeLocalTheta"),
    "the q/k norms": () => load(c, recipe.filter((s) => s.op !== "qk_norm")),
    "the embedding scale": () => without("embedScale"),
    "the (1 + w) norm weights": async () => ReferenceModel.load(c, await FIXTURE.hfAsStored()),
    "the post-attention and post-MLP norms": () => load(c, WITHOUT_POST_NORMS(recipe)),
    "GELU (SiLU instead)": () =>
      load(c, recipe.map((s) => s.op === "mlp" ? { ...s, act: "silu" } : s)),
  });
});

fixtureGpuTests("gemma3", FIXTURE, LLAMA_CPP_TOL, PROMPTS);
