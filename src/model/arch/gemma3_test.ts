/**
 * Gemma 3 on `test/fixtures/families/gemma3` (three layers: window 8 on layers 0 and 2 with their
 * own RoPE base 1e4, layer 1 global with 1e6; per-head q/k norms; no soft-caps): both formats
 * load to one config and one set of weights (HF norms `w` read as `1 + w`, the q/k norms too),
 * Kiln's float64 reference agrees with llama.cpp (within the 2.9e-3 that ggml's F16 GELU table
 * costs it), each feature moves the logits when turned off there, and the GPU forward (F32 and
 * Q4_K_M, both kernel paths) matches the reference.
 */
import { deepStrictEqual, strictEqual as equal } from "node:assert/strict";
import {
  checkAblations,
  familyFixture,
  fixtureGpuTests,
} from "../../../test/support/family_fixture.ts";
import { gemmaAblations, sameAsLlamaCpp } from "../../../test/support/gemma_checks.ts";

const FIXTURE = familyFixture("gemma3");
const TOKENS = FIXTURE.manifest.tokens;
/** llama.cpp's GELU reads an F16 table: its logits are 2.9e-3 off an exact forward pass. */
const LLAMA_CPP_TOL = 5e-3;
const PROMPTS = [TOKENS, TOKENS.slice(0, 5), TOKENS.slice(7, 30)];

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
  await sameAsLlamaCpp(FIXTURE, hf, gguf, (w) => w.layers[2]!.kNorm!, LLAMA_CPP_TOL);
});

Deno.test("gemma3: each feature, turned off in the float64 reference, moves the logits", async () => {
  const ck = await FIXTURE.hf();
  const a = gemmaAblations(FIXTURE, ck);
  await checkAblations(FIXTURE, ck, {
    ...a.shared,
    "the local RoPE base": () => a.without("ropeLocalTheta"),
    "the q/k norms": () => a.load(a.config, a.recipe.filter((s) => s.op !== "qk_norm")),
  });
});

fixtureGpuTests("gemma3", FIXTURE, LLAMA_CPP_TOL, PROMPTS);
