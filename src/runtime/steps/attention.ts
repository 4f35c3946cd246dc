/**
 * The attention steps of a layer recipe, one compiler each (`reference/layer.ts` interprets the
 * same steps in float64): the q/k/v product (`attn_norm_qkv` with the input RMSNorm folded in,
 * `qkv` without), the q/k RMSNorm (`qk_norm`, per head or over the projection), RoPE fused with
 * the KV cache write (`rope`), and paged attention (`attention`, one pass or split-K and a merge,
 * with the config's window, scale and soft-cap and the recipe's sinks).
 */
import { prepareAttention, prepareRopeKv } from "../../gpu/kernels/attention.ts";
import { prepareHeadNorm } from "../../gpu/kernels/dense.ts";
import { windowOf } from "../../model/attention_knobs.ts";
import { layerRotaryDim, ropeAttentionFactor } from "../../model/rope.ts";
import type { GpuLayer } from "../gpu_layers.ts";
import { missing, type Part, type PlanContext, type StepOf } from "./context.ts";
import { gatedQkv } from "./gated_attention.ts";

/** The q/k/v product, after the input norm when `norm` is given. */
function qkvProduct(x: PlanContext, l: number, L: GpuLayer, norm?: GPUBuffer): Part {
  const { s, c } = x;
  if (L.qkv === undefined) return Promise.reject(missing("q", l));
  return x.linear({
    x: s.x,
    weight: L.qkv,
    ...(L.qkvBias ? { b: L.qkvBias } : {}),
    y: s.qkv,
    n: x.Q + 2 * x.KV,
    k: x.H,
    ...(norm ? { norm: { weight: norm, eps: c.rmsNormEps } } : {}),
  }, `L${l}:qkv`);
}

/**
 * `attn_norm_qkv`: the q/k/v product with the input RMSNorm folded in (with `gatedQuery`, the
 * gated product and its split: `gated_attention.ts`).
 */
export function attnNormQkv(
  x: PlanContext,
  step: StepOf<"attn_norm_qkv">,
  l: number,
  L: GpuLayer,
): Part[] {
  if (step.gatedQuery) return gatedQkv(x, l, L);
  return [
    L.inputNorm ? qkvProduct(x, l, L, L.inputNorm) : Promise.reject(missing("inputNorm", l)),
  ];
}

/** `qkv`: the q/k/v product of the un-normed residual stream. */
export function qkv(x: PlanContext, _step: StepOf<"qkv">, l: number, L: GpuLayer): Part[] {
  return [qkvProduct(x, l, L)];
}

/** `qk_norm`: q's and k's RMSNorm, per head, or (`projection`) one row of all heads per token. */
export function qkNorm(x: PlanContext, step: StepOf<"qk_norm">, l: number, L: GpuLayer): Part[] {
  const { c, s } = x;
  const whole = step.width === "projection";
  const norm = (weight: GPUBuffer | undefined, which: string, heads: number, at: number) =>
    weight === undefined ? Promise.reject(missing(`${which}Norm`, l)) : prepareHeadNorm(x.d, {
      x: s.qkv,
      weight,
      tokens: x.tokens,
      heads: whole ? 1 : heads,
      headDim: whole ? heads * c.headDim : c.headDim,
      stride: x.Q + 2 * x.KV,
      offset: at,
      eps: c.rmsNormEps,
      dtype: "f32",
    }, `L${l}:${which}_norm`);
  return [norm(L.qNorm, "q", c.numHeads, 0), norm(L.kNorm, "k", c.numKvHeads, x.Q)];
}

/** `rope`: RoPE on q and k (the layer's window picks local frequencies) and the KV cache write. */
export function rope(x: PlanContext, _step: StepOf<"rope">, l: number): Part[] {
  const { c, s, m } = x;
  return [prepareRopeKv(x.d, {
    qkv: s.qkv,
    q: s.q,
    positions: s.positions,
    frequencies: windowOf(c, l) > 0 && m.ropeLocalFrequencies
      ? m.ropeLocalFrequencies
      : m.ropeFrequencies,
    slots: s.slots,
    kCache: m.kCache[l]!,
    vCache: m.vCache[l]!,
    tokens: x.tokens,
    heads: c.numHeads,
    kvHeads: c.numKvHeads,
    headDim: c.headDim,
    rotaryDim: layerRotaryDim(c, l),
    rotaryScale: ropeAttentionFactor(c.ropeScaling),
    kvDtype: x.kvDtype,
  }, `L${l}:rope_kv`)];
}

/** `attention`: paged attention over the layer's cache, split as the plan chose. */
export function attention(
  x: PlanContext,
  step: StepOf<"attention">,
  l: number,
  L: GpuLayer,
): Part[] {
  const { c, s, m } = x;
  if (step.sinks && !L.sinks) return [Promise.reject(missing("sinks", l))];
  return [prepareAttention(x.d, {
    q: s.q,
    kCache: m.kCache[l]!,
    vCache: m.vCache[l]!,
    positions: s.positions,
    tableOffsets: s.tableOffsets,
    blockTable: s.blockTable,
    out: s.attn,
    tokens: x.tokens,
    heads: c.numHeads,
    kvHeads: c.numKvHeads,
    headDim: c.headDim,
    blockSize: m.blockSize,
    splits: x.splits,
    maxKeys: x.maxKeys,
    ...x.partials,
    kvDtype: x.kvDtype,
    ...(c.attnScale !== undefined ? { scale: c.attnScale } : {}),
    ...(c.attnSoftcap !== undefined ? { softcap: c.attnSoftcap } : {}),
    window: windowOf(c, l),
    ...(step.sinks ? { sinks: L.sinks } : {}),
  }, `L${l}:attention`)];
}
