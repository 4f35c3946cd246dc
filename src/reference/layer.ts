/**
 * The float64 interpreter of a layer recipe (`ArchDescription.layer`): each step as plain
 * Float64Array loops over one run's scratch, in HF's conventions (rotate-half RoPE, grouped-query
 * causal attention with the config's window, scale and soft-cap, gated MLPs). `reference_model.ts`
 * runs it layer by layer.
 */
import { EngineError } from "../contract/errors.ts";
import type { Activation, LayerRole, LayerStep } from "../model/arch/mod.ts";
import { type ExpertMatrices, moeExpertsRef, moeRouteRef } from "./kernels/moe.ts";
import { windowOf } from "../model/attention_knobs.ts";
import { type RoundedInput, roundQ8_0 } from "./rounding.ts";
import type { ModelConfig } from "../model/config.ts";
import { layerRotaryDim, ropeAttentionFactor } from "../model/rope.ts";
import { type RecurrentState, shortConvLayerRef } from "./recurrent.ts";
import { mamba2Ref } from "./mamba2.ts";
import { deltaNetRef } from "./delta_net.ts";

/** A layer's tensors as float64 values, by role (optional ones absent), and its experts'. */
export type LayerValues =
  & { readonly [R in LayerRole]?: Float64Array }
  & { readonly experts?: readonly ExpertMatrices[] };

/**
 * TEST ONLY: an error planted in the reference pass, so that tests can show `verify` rejects a
 * model that makes it (`src/reference/mutation_test.ts`). Nothing outside tests sets one.
 * - `mask-off-by-one`: the causal mask shifted by one, each prompt position also attending to
 *   the next;
 * - `softmax-without-max-f32`: attention's softmax computed in f32 without subtracting the row
 *   max first (see {@linkcode softmax}).
 */
export type TestMutation = "mask-off-by-one" | "softmax-without-max-f32";

/** y[t, n] = sum_k x[t, k] W[n, k] + b[n] over `rows` rows; W is [n, k] row-major. */
export function linear(
  x: Float64Array,
  rows: number,
  w: Float64Array,
  b: Float64Array | undefined,
  n: number,
  k: number,
  y: Float64Array,
): void {
  for (let t = 0; t < rows; t++) {
    const xo = t * k;
    for (let j = 0; j < n; j++) {
      const wo = j * k;
      let acc = 0;
      for (let i = 0; i < k; i++) acc += x[xo + i]! * w[wo + i]!;
      y[t * n + j] = b === undefined ? acc : acc + b[j]!;
    }
  }
}

/** RMSNorm of each `dim`-wide row of `x` into `y` (which may be `x`). */
export function rmsNorm(
  x: Float64Array,
  rows: number,
  w: Float64Array,
  dim: number,
  eps: number,
  y: Float64Array,
): void {
  for (let t = 0; t < rows; t++) {
    const o = t * dim;
    let ss = 0;
    for (let d = 0; d < dim; d++) ss += x[o + d]! * x[o + d]!;
    const scale = 1 / Math.sqrt(ss / dim + eps);
    for (let d = 0; d < dim; d++) y[o + d] = w[d]! * (x[o + d]! * scale);
  }
}

/**
 * `s[0..n)` ← softmax(`s[0..n)`), in float64 with the row max subtracted; with `sink`, that
 * logit joins the row (its probability dropped: it only enlarges the sum). `f32NoMax` is the
 * `softmax-without-max-f32` test mutation: every step rounded to f32 and no max subtracted, so
 * a score above ln(f32 max) ≈ 88.72 makes exp overflow to +Infinity and the row NaN.
 */
function softmax(s: Float64Array, n: number, f32NoMax: boolean, sink?: number): void {
  let max = sink ?? -Infinity, sum = 0;
  if (f32NoMax) {
    for (let j = 0; j < n; j++) {
      sum = Math.fround(sum + (s[j] = Math.fround(Math.exp(Math.fround(s[j]!)))));
    }
    for (let j = 0; j < n; j++) s[j] = Math.fround(s[j]! / sum);
    return;
  }
  for (let j = 0; j < n; j++) max = Math.max(max, s[j]!);
  if (sink !== undefined) sum = Math.exp(sink - max);
  for (let j = 0; j < n; j++) sum += s[j] = Math.exp(s[j]! - max);
  for (let j = 0; j < n; j++) s[j] = s[j]! / sum;
}

/** One run's buffers: `T` tokens at positions `start..start+T`. */
export interface LayerScratch {
  T: number;
  start: number;
  /** The residual stream [T, hidden]. */
  x: Float64Array;
  xn: Float64Array;
  proj: Float64Array;
  q: Float64Array;
  k: Float64Array;
  v: Float64Array;
  attn: Float64Array;
  /** A gated query's gates [T, q] (`attn_norm_qkv` with `gatedQuery`). */
  qGate: Float64Array;
  gate: Float64Array;
  up: Float64Array;
  scores: Float64Array;
  /** cos and sin of each token's angles [T, invFreq.length]. */
  cos: Float64Array;
  sin: Float64Array;
  /** The same for sliding-window layers with a RoPE base of their own (else `cos`, `sin`). */
  cosLocal: Float64Array;
  sinLocal: Float64Array;
}

/** cos and sin of `T` positions from `start` at frequencies `invFreq`, times factor `f`. */
function angles(
  invFreq: Float64Array,
  T: number,
  start: number,
  f: number,
): [Float64Array, Float64Array] {
  const half = invFreq.length;
  const cos = new Float64Array(T * half), sin = new Float64Array(T * half);
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < half; i++) {
      const a = (start + t) * invFreq[i]!;
      cos[t * half + i] = Math.cos(a) * f;
      sin[t * half + i] = Math.sin(a) * f;
    }
  }
  return [cos, sin];
}

/** The scratch of a run of `T` tokens after `start` cached ones. */
export function layerScratch(
  c: ModelConfig,
  invFreq: Float64Array,
  T: number,
  start: number,
  localInvFreq: Float64Array = invFreq,
): LayerScratch {
  const H = c.hiddenSize, F = c.intermediateSize;
  const qDim = c.numHeads * c.headDim, kvDim = c.numKvHeads * c.headDim;
  const f = ropeAttentionFactor(c.ropeScaling);
  const [cos, sin] = angles(invFreq, T, start, f);
  const [cosLocal, sinLocal] = localInvFreq === invFreq
    ? [cos, sin]
    : angles(localInvFreq, T, start, f);
  return {
    T,
    start,
    x: new Float64Array(T * H),
    xn: new Float64Array(T * H),
    proj: new Float64Array(T * H),
    q: new Float64Array(T * qDim),
    k: new Float64Array(T * kvDim),
    v: new Float64Array(T * kvDim),
    attn: new Float64Array(T * qDim),
    qGate: new Float64Array(T * qDim),
    gate: new Float64Array(T * F),
    up: new Float64Array(T * F),
    scores: new Float64Array(start + T),
    cos,
    sin,
    cosLocal,
    sinLocal,
  };
}

/** A layer's view of the run: its weights and its slice of the KV cache. */
export interface LayerContext {
  c: ModelConfig;
  w: LayerValues;
  /** This layer's cached keys and values [positions, kvHeads * headDim]. */
  kCache: Float64Array;
  vCache: Float64Array;
  mutation: TestMutation | undefined;
  /** The layer's index (its window and RoPE base may be its own). */
  layer: number;
  /** TEST ONLY: the products whose input is rounded as llama.cpp's CPU does (`reference_rounding.ts`). */
  rounded?: ReadonlySet<RoundedInput>;
  /** A recurrent layer's state over the run (absent at attention layers). */
  state?: RecurrentState;
}

/** `v` ([rows, `row`]) as the product `role` reads it (rounded with `x.rounded`). */
function input(x: LayerContext, role: RoundedInput, v: Float64Array, row: number): Float64Array {
  return x.rounded?.has(role) ? roundQ8_0(v, row) : v;
}

function need(w: LayerValues, role: LayerRole): Float64Array {
  const t = w[role];
  if (t === undefined) {
    throw EngineError.invalidArgument(`reference model: the layer has no ${role} tensor`);
  }
  return t;
}

/**
 * Rotate-half RoPE on the first `rot` elements of each head (cos/sin rows: `rot / 2` or more),
 * with the window layers' angles when `local`.
 */
function rope(
  s: LayerScratch,
  buf: Float64Array,
  heads: number,
  D: number,
  rot: number,
  local: boolean,
): void {
  const half = rot / 2, row = s.cos.length / s.T;
  const cos = local ? s.cosLocal : s.cos, sin = local ? s.sinLocal : s.sin;
  for (let t = 0; t < s.T; t++) {
    for (let h = 0; h < heads; h++) {
      const o = (t * heads + h) * D;
      for (let i = 0; i < half; i++) {
        const x1 = buf[o + i]!, x2 = buf[o + i + half]!;
        const cs = cos[t * row + i]!, sn = sin[t * row + i]!;
        buf[o + i] = x1 * cs - x2 * sn;
        buf[o + i + half] = x2 * cs + x1 * sn;
      }
    }
  }
}

/** Causal attention over the cache; with `sinks`, each head's sink logit joins its softmax. */
function attention(s: LayerScratch, x: LayerContext, sinks: Float64Array | undefined): void {
  const c = x.c, D = c.headDim, heads = c.numHeads, group = heads / c.numKvHeads;
  const kvDim = c.numKvHeads * D, scale = c.attnScale ?? 1 / Math.sqrt(D);
  const cap = c.attnSoftcap, window = windowOf(c, x.layer);
  const { q, attn, scores, T, start } = s;
  attn.fill(0);
  for (let t = 0; t < T; t++) {
    // The mutated mask lets each prompt position see the next one too.
    const keys = x.mutation === "mask-off-by-one"
      ? Math.min(start + t + 2, start + T)
      : start + t + 1;
    // A window layer's query sees itself and the window - 1 keys before it.
    const first = window > 0 ? Math.max(0, start + t + 1 - window) : 0;
    const n = keys - first;
    for (let h = 0; h < heads; h++) {
      const qo = (t * heads + h) * D, kvo = Math.floor(h / group) * D;
      for (let j = 0; j < n; j++) {
        const ko = (first + j) * kvDim + kvo;
        let dot = 0;
        for (let d = 0; d < D; d++) dot += q[qo + d]! * x.kCache[ko + d]!;
        scores[j] = cap === undefined ? dot * scale : cap * Math.tanh(dot * scale / cap);
      }
      softmax(scores, n, x.mutation === "softmax-without-max-f32", sinks?.[h]);
      for (let j = 0; j < n; j++) {
        const p = scores[j]!, vo = (first + j) * kvDim + kvo;
        for (let d = 0; d < D; d++) attn[qo + d] = attn[qo + d]! + p * x.vCache[vo + d]!;
      }
    }
  }
}

/**
 * The mixture-of-experts MLP: the router (plus `routerBias` with `biases`) over RMSNorm(x) picks
 * each token's top-k experts (the config's `moe`); their gated MLPs (with their biases, with
 * `biases`; the step's activation), weighted, are added to x.
 */
function moeMlp(s: LayerScratch, x: LayerContext, step: LayerStep & { op: "moe_mlp" }): void {
  const { c, w } = x, T = s.T, H = c.hiddenSize, moe = c.moe;
  if (moe === undefined || w.experts === undefined) {
    throw EngineError.invalidArgument("reference model: a moe_mlp step without experts");
  }
  if (step.act === "swiglu_oai" && moe.swigluLimit === undefined) {
    throw EngineError.invalidArgument("reference model: swiglu_oai experts without swigluLimit");
  }
  rmsNorm(s.x, T, need(w, "postNorm"), H, c.rmsNormEps, s.xn);
  const logits = new Float64Array(T * moe.experts);
  const bias = step.biases ? need(w, "routerBias") : undefined;
  linear(s.xn, T, need(w, "router"), bias, moe.experts, H, logits);
  const routes = moeRouteRef(logits, moe.experts, moe.topK, moe.normTopK);
  const experts = step.biases
    ? w.experts
    : w.experts.map(({ gate, up, down }) => ({ gate, up, down }));
  const I = moe.expertIntermediateSize;
  moeExpertsRef(s.x, input(x, "expertsIn", s.xn, H), routes, experts, H, I, {
    activation: step.act,
    ...(moe.swigluLimit !== undefined ? { swigluLimit: moe.swigluLimit } : {}),
    ...(x.rounded?.has("expertsDown") ? { testRoundDownInput: (a) => roundQ8_0(a, I) } : {}),
  });
}

/** A gated query (each head's query, then its gate) into `s.q` and `s.qGate`. */
function gatedQuery(s: LayerScratch, x: LayerContext, from: Float64Array): void {
  const c = x.c, D = c.headDim, qDim = c.numHeads * D, H = c.hiddenSize;
  const qg = new Float64Array(s.T * 2 * qDim);
  linear(from, s.T, need(x.w, "q"), undefined, 2 * qDim, H, qg);
  for (let t = 0; t < s.T; t++) {
    for (let h = 0; h < c.numHeads; h++) {
      const at = (t * c.numHeads + h) * 2 * D, to = (t * c.numHeads + h) * D;
      s.q.set(qg.subarray(at, at + D), to);
      s.qGate.set(qg.subarray(at + D, at + 2 * D), to);
    }
  }
}

/** Run one recipe step of a layer over `s`. */
export function runStep(step: LayerStep, s: LayerScratch, x: LayerContext): void {
  const { c, w } = x;
  const T = s.T, H = c.hiddenSize, D = c.headDim, F = c.intermediateSize;
  const qDim = c.numHeads * D, kvDim = c.numKvHeads * D, branch = c.residualScale ?? 1;
  /** x += the branch in s.proj: scaled, or RMSNorm'd with `postNorm` first. */
  const add = (postNorm: LayerRole | undefined) => {
    if (postNorm) rmsNorm(s.proj, T, need(w, postNorm), H, c.rmsNormEps, s.proj);
    for (let i = 0; i < T * H; i++) s.x[i] = s.x[i]! + branch * s.proj[i]!;
  };
  switch (step.op) {
    case "attn_norm_qkv":
    case "qkv": {
      const from = step.op === "qkv" ? s.x : s.xn;
      if (step.op === "attn_norm_qkv") rmsNorm(s.x, T, need(w, "inputNorm"), H, c.rmsNormEps, s.xn);
      if (step.op === "attn_norm_qkv" && step.gatedQuery) gatedQuery(s, x, input(x, "q", from, H));
      else linear(input(x, "q", from, H), T, need(w, "q"), w.qBias, qDim, H, s.q);
      linear(input(x, "k", from, H), T, need(w, "k"), w.kBias, kvDim, H, s.k);
      linear(input(x, "v", from, H), T, need(w, "v"), w.vBias, kvDim, H, s.v);
      return;
    }
    case "qk_norm": {
      // Per head, or (`projection`) over each token's whole q (and k).
      const whole = step.width === "projection";
      const [qRows, qDimN] = whole ? [T, qDim] : [T * c.numHeads, D];
      const [kRows, kDimN] = whole ? [T, kvDim] : [T * c.numKvHeads, D];
      rmsNorm(s.q, qRows, need(w, "qNorm"), qDimN, c.rmsNormEps, s.q);
      rmsNorm(s.k, kRows, need(w, "kNorm"), kDimN, c.rmsNormEps, s.k);
      return;
    }
    case "rope": {
      const rot = layerRotaryDim(c, x.layer), local = windowOf(c, x.layer) > 0;
      rope(s, s.q, c.numHeads, D, rot, local);
      rope(s, s.k, c.numKvHeads, D, rot, local);
      x.kCache.set(s.k, s.start * kvDim);
      x.vCache.set(s.v, s.start * kvDim);
      return;
    }
    case "attention":
      attention(s, x, step.sinks ? need(w, "sinks") : undefined);
      return;
    case "o_proj_residual":
      linear(input(x, "o", s.attn, qDim), T, need(w, "o"), w.oBias, H, qDim, s.proj);
      add(step.postNorm ? "attnOutNorm" : undefined);
      return;
    case "mlp": {
      if (step.preNorm === false) s.xn.set(s.x);
      else rmsNorm(s.x, T, need(w, "postNorm"), H, c.rmsNormEps, s.xn);
      linear(input(x, "gate", s.xn, H), T, need(w, "gate"), undefined, F, H, s.gate);
      linear(input(x, "up", s.xn, H), T, need(w, "up"), undefined, F, H, s.up);
      for (let i = 0; i < T * F; i++) s.gate[i] = activation(step.act, s.gate[i]!) * s.up[i]!;
      linear(input(x, "down", s.gate, F), T, need(w, "down"), undefined, H, F, s.proj);
      add(step.postNorm ? "mlpOutNorm" : undefined);
      return;
    }
    case "moe_mlp":
      moeMlp(s, x, step);
      return;
    case "attention_gate":
      for (let i = 0; i < T * qDim; i++) s.attn[i] = s.attn[i]! / (1 + Math.exp(-s.qGate[i]!));
      return;
    case "short_conv":
    case "mamba2":
    case "delta_net": {
      if (x.state === undefined) {
        throw EngineError.invalidArgument(`reference model: a ${step.op} step without a state`);
      }
      rmsNorm(s.x, T, need(w, "inputNorm"), H, c.rmsNormEps, s.xn);
      const round = (role: LayerRole, v: Float64Array, row: number) => input(x, role, v, row);
      const mixer = { short_conv: shortConvLayerRef, mamba2: mamba2Ref, delta_net: deltaNetRef }[
        step.op
      ];
      s.proj.set(mixer(c, w, s.xn, T, x.state, round));
      add(undefined);
      return;
    }
  }
}

/** `act(g)`: SiLU, or GELU with the tanh approximation. */
export function activation(act: Activation, g: number): number {
  if (act === "silu") return g / (1 + Math.exp(-g));
  return 0.5 * g * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (g + 0.044715 * g * g * g)));
}
