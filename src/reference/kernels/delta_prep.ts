/**
 * Float64 references for `shaders/delta_prep.wgsl`: Qwen3.5's preparation of the gated delta
 * rule's inputs (the q and k L2 norms, beta and g) and its gated output norm, over dense arrays,
 * written from the formulas.
 */
import { softplusRef } from "./ssm_scan.ts";

/** Inputs of {@linkcode deltaPrepRef}, dense arrays. */
export interface DeltaPrepRefArgs {
  /** q [tokens, kHeads·kDim]. */
  q: ArrayLike<number>;
  /** k [tokens, kHeads·kDim]. */
  k: ArrayLike<number>;
  /** Beta logits [tokens, vHeads]. */
  b: ArrayLike<number>;
  /** Alpha [tokens, vHeads]. */
  alpha: ArrayLike<number>;
  /** dt bias [vHeads]. */
  dtBias: ArrayLike<number>;
  /** -exp(A_log) [vHeads]. */
  a: ArrayLike<number>;
  /** Tokens. */
  tokens: number;
  /** Key (and query) heads. */
  kHeads: number;
  /** Key head dim. */
  kDim: number;
  /** Value heads. */
  vHeads: number;
  /** Added to each head's sum of squares inside the root. */
  eps: number;
}

/** The outputs of {@linkcode deltaPrepRef}, dense. */
export interface DeltaPrepRef {
  /** Normed q [tokens, kHeads·kDim]. */
  q: Float64Array;
  /** Normed k [tokens, kHeads·kDim]. */
  k: Float64Array;
  /** sigmoid(b) [tokens, vHeads]. */
  beta: Float64Array;
  /** softplus(alpha + dtBias)·a [tokens, vHeads]. */
  g: Float64Array;
}

/** Each `dim`-wide slice of `x` divided by sqrt(its sum of squares + eps). */
export function l2NormRef(x: ArrayLike<number>, dim: number, eps: number): Float64Array {
  const out = Float64Array.from(x);
  for (let first = 0; first < out.length; first += dim) {
    let sum = 0;
    for (let e = 0; e < dim; e++) sum += out[first + e]! ** 2;
    const scale = 1 / Math.sqrt(sum + eps);
    for (let e = 0; e < dim; e++) out[first + e] = out[first + e]! * scale;
  }
  return out;
}

/** sigmoid(s) = 1 / (1 + e^-s). */
function sigmoid(s: number): number {
  return 1 / (1 + Math.exp(-s));
}

/** q and k L2-normed per head, beta = sigmoid(b), g = softplus(alpha + dtBias[h])·a[h]. */
export function deltaPrepRef(r: DeltaPrepRefArgs): DeltaPrepRef {
  const n = r.tokens * r.vHeads;
  const beta = new Float64Array(n), g = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const h = i % r.vHeads;
    beta[i] = sigmoid(r.b[i]!);
    g[i] = softplusRef(r.alpha[i]! + r.dtBias[h]!) * r.a[h]!;
  }
  return { q: l2NormRef(r.q, r.kDim, r.eps), k: l2NormRef(r.k, r.kDim, r.eps), beta, g };
}

/** Inputs of {@linkcode normGateRef}, dense arrays. */
export interface NormGateRefArgs {
  /** The delta rule's output [tokens, heads·headDim]. */
  o: ArrayLike<number>;
  /** The gate [tokens, heads·headDim]. */
  z: ArrayLike<number>;
  /** Norm weight [headDim], shared by the heads. */
  weight: ArrayLike<number>;
  /** Tokens. */
  tokens: number;
  /** Value heads. */
  heads: number;
  /** Value head dim. */
  headDim: number;
  /** Added to each head's mean square inside the root. */
  eps: number;
}

/** out = (o / sqrt(mean o² over the head + eps))·weight·silu(z), per token and head. */
export function normGateRef(r: NormGateRefArgs): Float64Array {
  const out = new Float64Array(r.tokens * r.heads * r.headDim);
  for (let first = 0; first < out.length; first += r.headDim) {
    let sum = 0;
    for (let j = 0; j < r.headDim; j++) sum += r.o[first + j]! ** 2;
    const scale = 1 / Math.sqrt(sum / r.headDim + r.eps);
    for (let j = 0; j < r.headDim; j++) {
      const s = r.z[first + j]!;
      out[first + j] = r.o[first + j]! * scale * r.weight[j]! * s * sigmoid(s);
    }
  }
  return out;
}
