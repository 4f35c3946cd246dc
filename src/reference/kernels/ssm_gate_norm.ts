/**
 * Float64 reference for `shaders/ssm_gate_norm.wgsl`: Mamba2's D skip, SiLU gate and grouped
 * RMSNorm over dense arrays, written from the formulas.
 */

/** Inputs of {@linkcode ssmGateNormRef}, dense arrays. */
export interface SsmGateNormRefArgs {
  /** The scan's output [tokens, inner]. */
  y: ArrayLike<number>;
  /** The scan's input x [tokens, inner]. */
  x: ArrayLike<number>;
  /** The gate [tokens, inner]. */
  z: ArrayLike<number>;
  /** D per head [heads]. */
  d: ArrayLike<number>;
  /** Norm weight [inner]. */
  weight: ArrayLike<number>;
  /** Tokens. */
  tokens: number;
  /** SSM heads. */
  heads: number;
  /** Channels per head. */
  headDim: number;
  /** Norm groups (equal slices of the row). */
  groups: number;
  /** Added to the mean square inside the square root. */
  eps: number;
}

/** silu(s) = s · sigmoid(s). */
function silu(s: number): number {
  return s / (1 + Math.exp(-s));
}

/**
 * out [tokens, inner]: v = (y + x·D[head]) · silu(z), then each group of `inner / groups`
 * channels scaled by 1 / sqrt(mean v² + eps) and multiplied by the weight.
 */
export function ssmGateNormRef(r: SsmGateNormRefArgs): Float64Array {
  const inner = r.heads * r.headDim, width = inner / r.groups;
  const out = new Float64Array(r.tokens * inner);
  for (let t = 0; t < r.tokens; t++) {
    for (let c = 0; c < inner; c++) {
      const i = t * inner + c;
      out[i] = (r.y[i]! + r.x[i]! * r.d[Math.floor(c / r.headDim)]!) * silu(r.z[i]!);
    }
    for (let g = 0; g < r.groups; g++) {
      const first = t * inner + g * width;
      let sum = 0;
      for (let k = 0; k < width; k++) sum += out[first + k]! ** 2;
      const scale = 1 / Math.sqrt(sum / width + r.eps);
      for (let k = 0; k < width; k++) {
        out[first + k] = out[first + k]! * scale * r.weight[g * width + k]!;
      }
    }
  }
  return out;
}
