/**
 * The float64 steps of recurrent layers (hybrid families), for `layer.ts`'s interpreter: each
 * layer keeps a fixed-size state for the run (`RecurrentState`) instead of keys and values.
 */
import { EngineError } from "../contract/errors.ts";
import type { LayerRole } from "../model/arch/mod.ts";
import type { ModelConfig } from "../model/config.ts";
import { layerKind } from "../model/layer_kinds.ts";
import { stateShape } from "../model/recurrent_state.ts";

/**
 * One recurrent layer's state over a run: the causal convolution's last inputs
 * [width - 1, channels] and a Mamba2 scan's state [heads, headDim, state].
 */
export interface RecurrentState {
  conv: Float64Array;
  ssm: Float64Array;
}

/** A fresh (zero) state for layer `l` of `c`: the values before position 0. */
export function freshState(c: ModelConfig, l: number): RecurrentState {
  const s = stateShape(c, layerKind(c, l));
  return {
    conv: new Float64Array(s.convRows * s.convChannels),
    ssm: new Float64Array(s.ssmValues),
  };
}

/**
 * A product's input as the product reads it: as is, or (TEST ONLY, `testLlamaCppRounding`)
 * rounded as llama.cpp's CPU rounds the input of a product over `role`'s weights.
 */
export type ProductInput = (role: LayerRole, v: Float64Array, row: number) => Float64Array;

/** The tensors a recurrent step reads. */
export type RecurrentWeights = { readonly [R in LayerRole]?: Float64Array };
type ConvWeights = RecurrentWeights;

export function need(w: ConvWeights, role: LayerRole): Float64Array {
  const t = w[role];
  if (t === undefined) {
    throw EngineError.invalidArgument(`reference model: the layer has no ${role} tensor`);
  }
  return t;
}

/**
 * The gated short convolution of `T` normed rows `xn` ([T, hidden]) continuing `state`: B | C | u
 * = xn · convIn; y = C ⊙ conv(B ⊙ u); returns y · convOut ([T, hidden]) and leaves in `state`
 * the last width - 1 values of B ⊙ u (oldest first).
 */
export function shortConvLayerRef(
  c: ModelConfig,
  w: ConvWeights,
  xn: Float64Array,
  T: number,
  state: RecurrentState,
  round: ProductInput = (_role, v) => v,
): Float64Array {
  const H = c.hiddenSize, W = c.convWidth;
  if (W === undefined) throw EngineError.invalidArgument("reference model: no convWidth");
  const bcx = product(round("convIn", xn, H), T, need(w, "convIn"), 3 * H, H);
  const u = new Float64Array(T * H);
  for (let t = 0; t < T; t++) {
    for (let ch = 0; ch < H; ch++) {
      u[t * H + ch] = bcx[t * 3 * H + ch]! * bcx[(t * 3 + 2) * H + ch]!;
    }
  }
  const y = causalConv(need(w, "conv"), W, u, T, H, state);
  for (let t = 0; t < T; t++) {
    for (let ch = 0; ch < H; ch++) y[t * H + ch] = bcx[(t * 3 + 1) * H + ch]! * y[t * H + ch]!;
  }
  return product(round("convOut", y, H), T, need(w, "convOut"), H, H);
}

/**
 * The causal depthwise convolution of `rows` ([T, C]) continuing `state`, whose `conv` holds the
 * `width - 1` rows before them (oldest first): out[t, c] = bias[c] + Σ_j taps[c, j]·u[t + j, c]
 * over u = those rows then `rows`; `state.conv` is left holding the last `width - 1` rows.
 */
export function causalConv(
  taps: Float64Array,
  width: number,
  rows: Float64Array,
  T: number,
  C: number,
  state: RecurrentState,
  bias?: Float64Array,
): Float64Array {
  const u = new Float64Array((width - 1 + T) * C);
  u.set(state.conv);
  u.set(rows.subarray(0, T * C), (width - 1) * C);
  const out = new Float64Array(T * C);
  for (let t = 0; t < T; t++) {
    for (let ch = 0; ch < C; ch++) {
      let acc = bias?.[ch] ?? 0;
      for (let j = 0; j < width; j++) acc += taps[ch * width + j]! * u[(t + j) * C + ch]!;
      out[t * C + ch] = acc;
    }
  }
  state.conv.set(u.subarray(T * C));
  return out;
}

/** SiLU. */
export const silu = (v: number): number => v / (1 + Math.exp(-v));

/** ggml's softplus: the value itself above 20. */
export const softplus = (v: number): number => v > 20 ? v : Math.log1p(Math.exp(v));

/** y[r, n] = Σ_k x[r, k]·W[n, k] over `rows` rows of `k` values. */
export function product(
  x: Float64Array,
  rows: number,
  w: Float64Array,
  n: number,
  k: number,
): Float64Array {
  const y = new Float64Array(rows * n);
  for (let r = 0; r < rows; r++) {
    for (let j = 0; j < n; j++) {
      let acc = 0;
      for (let i = 0; i < k; i++) acc += x[r * k + i]! * w[j * k + i]!;
      y[r * n + j] = acc;
    }
  }
  return y;
}
