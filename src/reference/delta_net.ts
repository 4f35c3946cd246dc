/**
 * The float64 gated delta net layer (`delta_net` step, Qwen3.5) for `layer.ts`'s interpreter,
 * written from the math of llama.cpp's `build_layer_attn_linear` and `ggml_gated_delta_net`: the
 * q | k | v and z, beta, alpha projections of the normed rows, the causal convolution of q | k | v
 * with SiLU, q and k divided by sqrt(Σx² + eps) per key head, beta = sigmoid(b), the decay
 * g = softplus(alpha + dt_bias)·A, the delta rule per value head (decay, read, write, then the
 * output read with q / sqrt(kDim)), the per-head RMSNorm times SiLU(z), and the output
 * projection. The convolution's and the rule's states carry across calls.
 */
import { EngineError } from "../contract/errors.ts";
import type { DeltaConfig } from "../model/arch/mod.ts";
import type { ModelConfig } from "../model/config.ts";
import { deltaWidths } from "../model/ssm_config.ts";
import {
  causalConv,
  need,
  product,
  type ProductInput,
  type RecurrentState,
  type RecurrentWeights,
  silu,
  softplus,
} from "./recurrent.ts";

/** Each `width`-wide piece of `v` divided by sqrt(Σx² + eps), in place. */
function l2Norm(v: Float64Array, width: number, eps: number): void {
  for (let o = 0; o < v.length; o += width) {
    let ss = 0;
    for (let i = 0; i < width; i++) ss += v[o + i]! ** 2;
    const scale = 1 / Math.sqrt(ss + eps);
    for (let i = 0; i < width; i++) v[o + i] = v[o + i]! * scale;
  }
}

/** The key head value head `h` reads. */
function keyHead(d: DeltaConfig, h: number): number {
  return d.headMap === "tiled" ? h % d.kHeads : Math.floor(h / (d.vHeads / d.kHeads));
}

/** The delta rule over the run, per value head; returns o [T, vHeads·vDim]. */
function rule(
  d: DeltaConfig,
  x: Float64Array,
  beta: Float64Array,
  g: Float64Array,
  T: number,
  S: Float64Array,
) {
  const C = deltaWidths(d).conv, qk = d.kHeads * d.kDim, scale = 1 / Math.sqrt(d.kDim);
  const o = new Float64Array(T * d.vHeads * d.vDim);
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < d.vHeads; h++) {
      const kh = keyHead(d, h), decay = Math.exp(g[t * d.vHeads + h]!);
      const q = t * C + kh * d.kDim, k = q + qk, v = t * C + 2 * qk + h * d.vDim;
      for (let j = 0; j < d.vDim; j++) {
        const col = (h * d.vDim + j) * d.kDim;
        let read = 0;
        for (let i = 0; i < d.kDim; i++) read += (S[col + i] = S[col + i]! * decay) * x[k + i]!;
        const delta = beta[t * d.vHeads + h]! * (x[v + j]! - read);
        let out = 0;
        for (let i = 0; i < d.kDim; i++) {
          S[col + i] = S[col + i]! + x[k + i]! * delta;
          out += S[col + i]! * x[q + i]!;
        }
        o[(t * d.vHeads + h) * d.vDim + j] = out * scale;
      }
    }
  }
  return o;
}

/** The delta net branch of `T` normed rows `xn` ([T, hidden]) continuing `st`: [T, hidden]. */
export function deltaNetRef(
  c: ModelConfig,
  w: RecurrentWeights,
  xn: Float64Array,
  T: number,
  st: RecurrentState,
  round: ProductInput = (_role, v) => v,
): Float64Array {
  const d = c.delta;
  if (d === undefined || c.convWidth === undefined) {
    throw EngineError.invalidArgument("reference model: a delta_net step without delta sizes");
  }
  const H = c.hiddenSize, { conv: C, inner } = deltaWidths(d), eps = c.rmsNormEps;
  const qkv = product(round("deltaQkv", xn, H), T, need(w, "deltaQkv"), C, H);
  const z = product(round("deltaZ", xn, H), T, need(w, "deltaZ"), inner, H);
  const b = product(round("deltaBeta", xn, H), T, need(w, "deltaBeta"), d.vHeads, H);
  const a = product(round("deltaAlpha", xn, H), T, need(w, "deltaAlpha"), d.vHeads, H);
  // The convolution of q | k | v over the state and this run, through SiLU ([T, conv]).
  const x = causalConv(need(w, "ssmConv"), c.convWidth, qkv, T, C, st).map(silu);
  for (let t = 0; t < T; t++) l2Norm(x.subarray(t * C, t * C + 2 * d.kHeads * d.kDim), d.kDim, eps);
  const A = need(w, "ssmA"), dtBias = need(w, "ssmDtBias");
  const beta = b.map((v) => 1 / (1 + Math.exp(-v)));
  const g = a.map((v, i) => softplus(v + dtBias[i % d.vHeads]!) * A[i % d.vHeads]!);
  const o = rule(d, x, beta, g, T, st.ssm);
  const norm = need(w, "ssmNorm");
  for (let r = 0; r < T * d.vHeads; r++) {
    let ss = 0;
    for (let j = 0; j < d.vDim; j++) ss += o[r * d.vDim + j]! ** 2;
    const scale = 1 / Math.sqrt(ss / d.vDim + eps);
    for (let j = 0; j < d.vDim; j++) {
      const i = r * d.vDim + j;
      o[i] = norm[j]! * o[i]! * scale * silu(z[i]!);
    }
  }
  return product(round("ssmOut", o, inner), T, need(w, "ssmOut"), H, inner);
}
