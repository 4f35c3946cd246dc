/**
 * The float64 mixture-of-experts MLP of a `moe_mlp` step: the router (with its bias when the
 * step has `biases`) routes each token to its top-k experts (`moeRouteRef`); each expert's gated
 * MLP, with its biases and the step's activation (SwiGLU, or the clamped `swiglu_oai`), weighted,
 * is added to x. SwiGLU experts without biases run `moeExpertsRef`, the GPU kernels' reference.
 */
import { EngineError } from "../contract/errors.ts";
import {
  type ExpertMatrices,
  moeExpertsRef,
  moeRouteRef,
  type Routes,
} from "../gpu/reference/moe.ts";
import type { ExpertActivation } from "./arch/mod.ts";
import type { ModelConfig } from "./config.ts";

/** One expert's matrices and, in families that have them, its biases. */
export interface ExpertValues extends ExpertMatrices {
  /** Bias of the gate product [inter]. */
  gateBias?: ArrayLike<number>;
  /** Bias of the up product [inter]. */
  upBias?: ArrayLike<number>;
  /** Bias of the down product [hidden]. */
  downBias?: ArrayLike<number>;
}

/** The constant α of `swiglu_oai`: out = (u + 1) · g · σ(α · g). */
export const SWIGLU_OAI_ALPHA = 1.702;

/**
 * The clamped SwiGLU of gate `g` and up `u`: g = min(g, limit), u = clamp(u, -limit, limit),
 * (u + 1) · g · σ(1.702 · g).
 */
export function swigluOai(g: number, u: number, limit: number): number {
  const x = Math.min(g, limit), y = Math.min(Math.max(u, -limit), limit);
  return (y + 1) * x / (1 + Math.exp(-SWIGLU_OAI_ALPHA * x));
}

/** The step's knobs the experts read. */
export interface MoeStep {
  act: ExpertActivation;
  biases?: boolean;
}

/**
 * x += the MoE MLP of `normed` (both [tokens, hidden]): router `router` [experts, hidden] with
 * `routerBias` (with `step.biases`), then the routed experts.
 */
export function moeRef(
  c: ModelConfig,
  step: MoeStep,
  x: Float64Array,
  normed: Float64Array,
  router: Float64Array,
  routerBias: Float64Array | undefined,
  experts: readonly ExpertValues[],
): void {
  const moe = c.moe;
  if (moe === undefined) throw EngineError.invalidArgument("reference model: moe_mlp without moe");
  const H = c.hiddenSize, E = moe.experts, T = x.length / H;
  if (step.biases && routerBias === undefined) {
    throw EngineError.invalidArgument("reference model: the layer has no routerBias tensor");
  }
  const logits = new Float64Array(T * E);
  for (let t = 0; t < T; t++) {
    for (let e = 0; e < E; e++) {
      let acc = step.biases ? routerBias![e]! : 0;
      for (let k = 0; k < H; k++) acc += normed[t * H + k]! * router[e * H + k]!;
      logits[t * E + e] = acc;
    }
  }
  const routes = moeRouteRef(logits, E, moe.topK, moe.normTopK);
  if (step.act === "silu" && !step.biases) {
    moeExpertsRef(x, normed, routes, experts, H, moe.expertIntermediateSize);
    return;
  }
  const limit = moe.swigluLimit;
  if (step.act === "swiglu_oai" && limit === undefined) {
    throw EngineError.invalidArgument("reference model: swiglu_oai experts without swigluLimit");
  }
  expertsRef(
    x,
    normed,
    routes,
    experts,
    H,
    moe.expertIntermediateSize,
    (g, u) => step.act === "silu" ? g / (1 + Math.exp(-g)) * u : swigluOai(g, u, limit!),
    step.biases,
  );
}

/** The routed experts with biases (`biases`) and activation `act(gate, up)` added to x. */
function expertsRef(
  x: Float64Array,
  normed: Float64Array,
  routes: Routes,
  experts: readonly ExpertValues[],
  hidden: number,
  inter: number,
  act: (g: number, u: number) => number,
  biases = false,
): void {
  const tokens = x.length / hidden, topK = routes.ids.length / tokens;
  const a = new Float64Array(inter);
  const bias = (v: ArrayLike<number> | undefined, i: number, role: string) => {
    if (!biases) return 0;
    if (v === undefined) {
      throw EngineError.invalidArgument(`reference model: an expert has no ${role} tensor`);
    }
    return v[i]!;
  };
  for (let t = 0; t < tokens; t++) {
    for (let j = 0; j < topK; j++) {
      const e = experts[routes.ids[t * topK + j]!]!, w = routes.weights[t * topK + j]!;
      for (let r = 0; r < inter; r++) {
        let g = bias(e.gateBias, r, "gateBias"), u = bias(e.upBias, r, "upBias");
        for (let k = 0; k < hidden; k++) {
          const v = normed[t * hidden + k]!;
          g += v * e.gate[r * hidden + k]!;
          u += v * e.up[r * hidden + k]!;
        }
        a[r] = act(g, u);
      }
      for (let h = 0; h < hidden; h++) {
        let d = bias(e.downBias, h, "downBias");
        for (let r = 0; r < inter; r++) d += a[r]! * e.down[h * inter + r]!;
        x[t * hidden + h] = x[t * hidden + h]! + w * d;
      }
    }
  }
}
