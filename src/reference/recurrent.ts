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
  xn0: Float64Array,
  T: number,
  state: RecurrentState,
  round: ProductInput = (_role, v) => v,
): Float64Array {
  const xn = round("convIn", xn0, c.hiddenSize);
  const H = c.hiddenSize, W = c.convWidth;
  if (W === undefined) throw EngineError.invalidArgument("reference model: no convWidth");
  const inW = need(w, "convIn"), taps = need(w, "conv"), outW = need(w, "convOut");
  // The inputs of the convolution: the state's W - 1 rows, then this run's T rows.
  const u = new Float64Array((W - 1 + T) * H);
  u.set(state.conv);
  const gateC = new Float64Array(T * H);
  for (let t = 0; t < T; t++) {
    for (let ch = 0; ch < H; ch++) {
      let b = 0, g = 0, v = 0;
      for (let k = 0; k < H; k++) {
        const xv = xn[t * H + k]!;
        b += inW[ch * H + k]! * xv;
        g += inW[(H + ch) * H + k]! * xv;
        v += inW[(2 * H + ch) * H + k]! * xv;
      }
      u[(W - 1 + t) * H + ch] = b * v;
      gateC[t * H + ch] = g;
    }
  }
  const y = new Float64Array(T * H);
  for (let t = 0; t < T; t++) {
    for (let ch = 0; ch < H; ch++) {
      let acc = 0;
      for (let j = 0; j < W; j++) acc += taps[ch * W + j]! * u[(t + j) * H + ch]!;
      y[t * H + ch] = gateC[t * H + ch]! * acc;
    }
  }
  state.conv.set(u.subarray(T * H));
  const yIn = round("convOut", y, H);
  const out = new Float64Array(T * H);
  for (let t = 0; t < T; t++) {
    for (let n = 0; n < H; n++) {
      let acc = 0;
      for (let k = 0; k < H; k++) acc += outW[n * H + k]! * yIn[t * H + k]!;
      out[t * H + n] = acc;
    }
  }
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
