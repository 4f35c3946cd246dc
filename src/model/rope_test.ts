import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { GgufMetadata } from "../formats/gguf/metadata.ts";
import {
  dynamicNtkTheta,
  ropeAttentionFactor,
  ropeFactorList,
  ropeInvFreq,
  type RopeScaling,
  yarnAttentionFactor,
} from "./rope.ts";
import { ggufRopeMetadata, ggufRopeScaling } from "./rope_config.ts";

type Yarn = Extract<RopeScaling, { type: "yarn" }>;

const GPT_OSS: Yarn = {
  type: "yarn",
  factor: 32,
  originalMaxPositionEmbeddings: 4096,
  betaFast: 32,
  betaSlow: 1,
  truncate: true,
  attentionFactor: yarnAttentionFactor(32),
};

Deno.test("YaRN against the paper: kept above beta_fast turns, interpolated below beta_slow, blended between", () => {
  // gpt-oss: 64 rotated elements, base 150000, 32x over 4096 positions.
  const [dim, theta, s] = [64, 150000, GPT_OSS];
  const plain = ropeInvFreq(dim, theta);
  const yarn = ropeInvFreq(dim, theta, s);
  // The paper's r(d) = L / lambda_d: turns of frequency d over the original context.
  const turns = (i: number) => s.originalMaxPositionEmbeddings * plain[i]! / (2 * Math.PI);
  // The ramp's ends, from the paper's beta = 32 and alpha = 1 solved for the dimension:
  // dim * ln(4096 / (2 pi beta)) / (2 ln 150000) = 8.09 and 17.40, rounded out to 8 and 18.
  const [low, high] = [8, 18];
  ok(turns(low) > 32 && turns(low + 1) < 32, `dimension 8 turns ${turns(low)} times`);
  ok(turns(high - 1) > 1 && turns(high) < 1, `dimension 18 turns ${turns(high)} times`);
  let kept = 0, scaled = 0;
  for (let i = 0; i < dim / 2; i++) {
    const f = plain[i]!, y = yarn[i]!;
    if (turns(i) >= 32) { // gamma = 1: extrapolated, the frequency as trained
      equal(y, f, `frequency ${i} kept`);
      kept++;
    } else if (turns(i) <= 1) { // gamma = 0: fully interpolated, f / s
      ok(Math.abs(y - f / 32) <= 1e-15 * f, `frequency ${i}: ${y} vs ${f / 32}`);
      scaled++;
    } else { // between: llama.cpp's and HF's ramp, linear in the dimension index
      const w = (i - low) / (high - low);
      ok(Math.abs(y - (f / 32) * w - f * (1 - w)) <= 1e-15 * f, `frequency ${i}`);
    }
  }
  equal(kept, 9);
  equal(scaled, 14);
  // Attention factor sqrt(1/t) = 0.1 ln(s) + 1 (paper eq. 22), on cos and sin.
  equal(ropeAttentionFactor(s), 0.1 * Math.log(32) + 1);
  // Without truncation (HF's gpt-oss config) the ramp runs from 8.09 to 17.40 instead.
  const loose = ropeInvFreq(dim, theta, { ...s, truncate: false });
  const lo = dim * Math.log(4096 / (32 * 2 * Math.PI)) / (2 * Math.log(theta));
  const hi = dim * Math.log(4096 / (2 * Math.PI)) / (2 * Math.log(theta));
  const w = (12 - lo) / (hi - lo);
  ok(Math.abs(loose[12]! - plain[12]! * (w / 32 + 1 - w)) <= 1e-15 * plain[12]!);
  ok(Math.abs(loose[12]! - yarn[12]!) > 1e-3 * yarn[12]!, "truncation moves the ramp");
});

/**
 * ggml's CPU RoPE cache (ggml-cpu/ops.cpp `ggml_rope_cache_init` + `rope_yarn`), restated in f32:
 * the angle at position p of pair i is p * base^(-2i/dims), blended between freq_scale times it
 * and itself by the ramp over ggml_rope_yarn_corr_dims; cos/sin times llama.cpp's attention
 * factor (llama-context.cpp divides 1 + 0.1 ln(factor) out of cparams and ggml multiplies it back).
 */
function ggmlCache(p: number, dims: number, base: number, s: Yarn): Float32Array {
  const f = Math.fround;
  const corr = (rot: number) =>
    f(
      dims * f(Math.log(f(s.originalMaxPositionEmbeddings / f(rot * 2 * f(Math.PI))))) /
        f(2 * f(Math.log(base))),
    );
  const low = Math.max(0, Math.floor(corr(s.betaFast)));
  const high = Math.min(dims - 1, Math.ceil(corr(s.betaSlow)));
  const freqScale = f(1 / s.factor);
  const cparamsAttn = f(f(1 + 0.1 * f(Math.log(s.factor))) / f(1 + 0.1 * f(Math.log(s.factor))));
  const thetaScale = f(base ** (-2 / dims));
  const out = new Float32Array(dims);
  let theta = f(p);
  for (let i0 = 0; i0 < dims; i0 += 2) {
    const interp = f(freqScale * theta);
    const y = (i0 / 2 - low) / Math.max(0.001, high - low);
    const mix = 1 - Math.min(1, Math.max(0, y));
    const angle = f(f(interp * (1 - mix)) + f(theta * mix));
    const mscale = f(cparamsAttn * f(1 + 0.1 * f(Math.log(1 / freqScale))));
    out[i0] = f(Math.cos(angle) * mscale);
    out[i0 + 1] = f(Math.sin(angle) * mscale);
    theta = f(theta * thetaScale);
  }
  return out;
}

Deno.test("YaRN agrees with ggml's RoPE cache (gpt-oss's and Qwen's settings) to f32 rounding", () => {
  const cases: [number, number, Yarn][] = [
    [64, 150000, GPT_OSS],
    [128, 1e6, { ...GPT_OSS, factor: 4, originalMaxPositionEmbeddings: 32768 }],
    [16, 10000, { ...GPT_OSS, factor: 8, originalMaxPositionEmbeddings: 256, betaFast: 16 }],
  ];
  for (const [dims, base, s] of cases) {
    s.attentionFactor = yarnAttentionFactor(s.factor);
    const inv = ropeInvFreq(dims, base, s);
    const m = ropeAttentionFactor(s);
    let worst = 0;
    for (const p of [0, 1, 7, 49, 300]) {
      const g = ggmlCache(p, dims, base, s);
      for (let i = 0; i < dims / 2; i++) {
        const a = p * inv[i]!;
        // f32 angles err by about p * 2^-24 rad (relative), a few ulps through the blend.
        const tol = 4e-7 * (1 + p) * m;
        worst = Math.max(worst, Math.abs(g[2 * i]! - Math.cos(a) * m) / tol);
        worst = Math.max(worst, Math.abs(g[2 * i + 1]! - Math.sin(a) * m) / tol);
      }
    }
    ok(worst <= 1, `dims ${dims}: ${worst} tolerances off ggml`);
  }
});

Deno.test("dynamic NTK: one base for factor x the original context (vLLM's), 1x is plain RoPE", () => {
  const [dim, theta] = [64, 10000];
  // base * ((factor * L / L0) - (factor - 1))^(dim / (dim - 2)) with L = factor * L0.
  const want = theta * (4 * 4 * 1000 / 1000 - 3) ** (64 / 62);
  ok(Math.abs(dynamicNtkTheta(theta, dim, 4) - want) <= 1e-9 * want);
  const inv = ropeInvFreq(dim, theta, { type: "dynamic", factor: 4 });
  for (const i of [0, 5, 31]) {
    ok(Math.abs(inv[i]! - want ** (-2 * i / dim)) <= 1e-15, `frequency ${i}`);
  }
  deepStrictEqual(ropeInvFreq(dim, theta, { type: "dynamic", factor: 1 }), ropeInvFreq(dim, theta));
  equal(ropeAttentionFactor({ type: "dynamic", factor: 4 }), 1);
});

const meta = (kv: Record<string, unknown>) => new GgufMetadata(kv, "m.gguf");

Deno.test("GGUF YaRN keys: llama.cpp's defaults, betas and attention factors, written and read back", () => {
  const p = "gpt-oss.";
  const read = (kv: Record<string, unknown>) =>
    ggufRopeScaling(meta({ [`${p}rope.scaling.type`]: "yarn", ...kv }), p, 131072);
  deepStrictEqual(
    read({
      [`${p}rope.scaling.factor`]: 32,
      [`${p}rope.scaling.original_context_length`]: 4096,
    }),
    GPT_OSS,
  );
  const bare = read({}) as Yarn;
  equal(bare.factor, 1, "llama.cpp: no factor is no scaling");
  equal(bare.originalMaxPositionEmbeddings, 131072, "the context when no original is given");
  const tuned = read({
    [`${p}rope.scaling.factor`]: 4,
    [`${p}rope.scaling.yarn_beta_fast`]: 8,
    [`${p}rope.scaling.yarn_beta_slow`]: 2,
    [`${p}rope.scaling.yarn_log_multiplier`]: 0.5,
    [`${p}rope.scaling.attn_factor`]: 2,
  }) as Yarn;
  deepStrictEqual([tuned.betaFast, tuned.betaSlow], [8, 2]);
  const ratio = (0.1 * Math.log(4) + 1) / (0.05 * Math.log(4) + 1);
  ok(Math.abs(tuned.attentionFactor - 2 * ratio) < 1e-12, `${tuned.attentionFactor}`);
  equal(
    (read({ [`${p}rope.scaling.yarn_attn_factor`]: 1.25 }) as Yarn).attentionFactor,
    1.25,
  );
  throws(
    () => read({ [`${p}rope.scaling.yarn_beta_fast`]: "32" }),
    (e: unknown) => e instanceof EngineError && e.message.includes("yarn_beta_fast"),
  );
  // Written (as convert.ts does) and read back: the same scaling, a given attention factor
  // carried as llama.cpp's `attn_factor` multiplier.
  for (const s of [GPT_OSS, { ...GPT_OSS, betaFast: 16, attentionFactor: 1.75 }]) {
    const warnings: string[] = [];
    const kv = Object.fromEntries(
      Object.entries(ggufRopeMetadata(s, "gpt-oss", warnings)).map(([k, v]) => [k, v.value]),
    );
    const back = ggufRopeScaling(meta(kv), p, 131072) as Yarn;
    ok(Math.abs(back.attentionFactor - s.attentionFactor) < 1e-6, `${back.attentionFactor}`);
    deepStrictEqual({ ...back, attentionFactor: 0 }, { ...s, attentionFactor: 0 });
    equal(warnings.length, 0);
  }
  const warnings: string[] = [];
  ggufRopeMetadata({ ...GPT_OSS, truncate: false }, "gpt-oss", warnings);
  ok(warnings.some((w) => w.includes("truncate")), String(warnings));
  throws(
    () => ggufRopeMetadata({ type: "dynamic", factor: 2 }, "llama", []),
    (e: unknown) => e instanceof EngineError && e.message.includes("rope_type"),
  );
});

Deno.test("LongRoPE: the factors follow the engine's context, the long ones only past the original", () => {
  const s: RopeScaling = {
    type: "longrope",
    shortFactor: [1, 2],
    longFactor: [5, 7],
    originalMaxPositionEmbeddings: 4096,
    maxPositionEmbeddings: 131072,
    attentionFactor: 1.19,
  };
  // llama.cpp: long when n_ctx_per_seq > n_ctx_orig_yarn.
  deepStrictEqual(ropeFactorList(s, 256), [1, 2]);
  deepStrictEqual(ropeFactorList(s, 4096), [1, 2]);
  deepStrictEqual(ropeFactorList(s, 4097), [5, 7]);
  // No context given: the model's whole context (an engine whose cache holds it).
  deepStrictEqual(ropeFactorList(s), [5, 7]);
  const plain = ropeInvFreq(4, 10000);
  deepStrictEqual([...ropeInvFreq(4, 10000, s, 4096)], [plain[0]! / 1, plain[1]! / 2]);
  deepStrictEqual([...ropeInvFreq(4, 10000, s, 8192)], [plain[0]! / 5, plain[1]! / 7]);
  // Only LongRoPE depends on the context.
  const linear: RopeScaling = { type: "linear", factor: 4 };
  deepStrictEqual(ropeInvFreq(8, 10000, linear, 16), ropeInvFreq(8, 10000, linear, 1 << 20));
});
