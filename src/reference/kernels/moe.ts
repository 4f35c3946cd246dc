/**
 * Float64 references of the mixture-of-experts kernels (`shaders/moe_route.wgsl`,
 * `moe_experts.wgsl`).
 */

/** Each token's chosen experts and their weights, [tokens, topK] each. */
export interface Routes {
  /** Expert ids, most probable first. */
  ids: Uint32Array;
  /** Their weights. */
  weights: Float64Array;
}

/**
 * Route each token of `logits` ([tokens, experts], the router's outputs): the softmax over all
 * experts, the `topK` most probable (highest first; a tie goes to the lower index), their
 * probabilities renormalised to sum 1 when `norm`.
 */
export function moeRouteRef(
  logits: ArrayLike<number>,
  experts: number,
  topK: number,
  norm: boolean,
): Routes {
  const tokens = logits.length / experts;
  const ids = new Uint32Array(tokens * topK);
  const weights = new Float64Array(tokens * topK);
  const p = new Float64Array(experts);
  for (let t = 0; t < tokens; t++) {
    const o = t * experts;
    let max = -Infinity, sum = 0;
    for (let e = 0; e < experts; e++) max = Math.max(max, logits[o + e]!);
    for (let e = 0; e < experts; e++) sum += p[e] = Math.exp(logits[o + e]! - max);
    const order = Array.from({ length: experts }, (_, e) => e)
      .sort((a, b) => p[b]! - p[a]! || a - b)
      .slice(0, topK);
    const chosen = order.reduce((n, e) => n + p[e]!, 0);
    order.forEach((e, j) => {
      ids[t * topK + j] = e;
      weights[t * topK + j] = p[e]! / (norm ? chosen : sum);
    });
  }
  return { ids, weights };
}

/** One expert's gated MLP weights, row-major: gate and up [inter, hidden], down [hidden, inter]. */
export interface ExpertMatrices {
  /** Gate projection [inter, hidden]. */
  gate: ArrayLike<number>;
  /** Up projection [inter, hidden]. */
  up: ArrayLike<number>;
  /** Down projection [hidden, inter]. */
  down: ArrayLike<number>;
  /** Gate bias [inter] (absent: none). */
  gateBias?: ArrayLike<number>;
  /** Up bias [inter] (absent: none). */
  upBias?: ArrayLike<number>;
  /** Down bias [hidden] (absent: none). */
  downBias?: ArrayLike<number>;
}

/** The experts' activation (as `MoeExpertsArgs.activation` has it) and its limit. */
export interface ExpertActRef {
  /** `silu` (default): silu(g)·u; `swiglu_oai`: the clamped SwiGLU (`swigluOaiRef`). */
  activation?: "silu" | "swiglu_oai";
  /** `swiglu_oai`'s limit. */
  swigluLimit?: number;
  /**
   * TEST ONLY: the down product's input as llama.cpp's CPU rounds it (the model reference's
   * `testLlamaCppRounding`).
   */
  testRoundDownInput?: (act: Float64Array) => Float64Array;
}

/**
 * gpt-oss's clamped SwiGLU of gate g and up u: g' = min(g, limit), u' = clamp(u, -limit, limit),
 * (u' + 1)·g'·sigmoid(1.702·g').
 */
export function swigluOaiRef(g: number, u: number, limit: number): number {
  const gc = Math.min(g, limit), uc = Math.min(Math.max(u, -limit), limit);
  return gc / (1 + Math.exp(-1.702 * gc)) * (uc + 1);
}

/**
 * The routed experts' output added to `x` ([tokens, hidden], in place): for each token, over its
 * routes j, x += weights[j] · down_e(act(gate_e(n), up_e(n))) with e = ids[j] and n the token's
 * row of `normed` ([tokens, hidden], the MLP's input); each product plus its expert's bias where
 * it has one; act SwiGLU or, with `opts`, the clamped SwiGLU.
 */
export function moeExpertsRef(
  x: Float64Array,
  normed: ArrayLike<number>,
  routes: Routes,
  experts: readonly ExpertMatrices[],
  hidden: number,
  inter: number,
  opts: ExpertActRef = {},
): void {
  const tokens = x.length / hidden, topK = routes.ids.length / tokens;
  const oai = opts.activation === "swiglu_oai", limit = opts.swigluLimit ?? Infinity;
  const act = new Float64Array(inter);
  for (let t = 0; t < tokens; t++) {
    for (let j = 0; j < topK; j++) {
      const e = experts[routes.ids[t * topK + j]!]!, w = routes.weights[t * topK + j]!;
      for (let r = 0; r < inter; r++) {
        let g = e.gateBias?.[r] ?? 0, u = e.upBias?.[r] ?? 0;
        for (let k = 0; k < hidden; k++) {
          const v = normed[t * hidden + k]!;
          g += v * e.gate[r * hidden + k]!;
          u += v * e.up[r * hidden + k]!;
        }
        act[r] = oai ? swigluOaiRef(g, u, limit) : g / (1 + Math.exp(-g)) * u;
      }
      const a = opts.testRoundDownInput?.(act) ?? act;
      for (let h = 0; h < hidden; h++) {
        let d = e.downBias?.[h] ?? 0;
        for (let r = 0; r < inter; r++) d += a[r]! * e.down[h * inter + r]!;
        x[t * hidden + h] = x[t * hidden + h]! + w * d;
      }
    }
  }
}
