/**
 * Float64 reference for `shaders/ssm_scan.wgsl`: the Mamba2 selective scan (scalar A per head)
 * over explicit runs, written from the recurrence.
 */

/** One sequence's tokens in a step: `count` tokens from `start`, at `position`, in `slot`. */
export interface SsmRun {
  /** State slot of the sequence. */
  slot: number;
  /** First token of the run in the step. */
  start: number;
  /** Tokens in the run. */
  count: number;
  /** Position of the first token (0: start from a zero state). */
  position: number;
}

/** Inputs of {@linkcode ssmScanRef}, dense arrays. */
export interface SsmScanRefArgs {
  /** [tokens, heads, headDim]. */
  x: ArrayLike<number>;
  /** Raw dt [tokens, heads]. */
  dt: ArrayLike<number>;
  /** [heads]. */
  dtBias: ArrayLike<number>;
  /** [heads]. */
  a: ArrayLike<number>;
  /** [tokens, groups, dState]. */
  b: ArrayLike<number>;
  /** [tokens, groups, dState]. */
  c: ArrayLike<number>;
  /** [slots, heads, headDim, dState]: the state before the step (not modified). */
  state: ArrayLike<number>;
  /** The step's runs. */
  runs: readonly SsmRun[];
  /** Tokens in the step (y's rows). */
  tokens: number;
  /** SSM heads. */
  heads: number;
  /** Channels per head. */
  headDim: number;
  /** State width. */
  dState: number;
  /** B/C groups. */
  groups: number;
  /** The group head h reads (default h / (heads / groups), as ggml's repeat_interleave). */
  groupOf?: ((h: number) => number) | undefined;
}

/** softplus(v) = log(1 + e^v), and v itself above 20 (as ggml). */
export function softplusRef(v: number): number {
  return v > 20 ? v : Math.log1p(Math.exp(v));
}

/**
 * y [tokens, heads, headDim] (zeros for tokens in no run) and the state after the step (a copy
 * of `state` with each run's final state in its slot).
 */
export function ssmScanRef(r: SsmScanRefArgs): { y: Float64Array; state: Float64Array } {
  const { heads, headDim, dState, groups } = r;
  const groupOf = r.groupOf ?? ((h: number) => Math.floor(h / (heads / groups)));
  const y = new Float64Array(r.tokens * heads * headDim);
  const state = Float64Array.from(r.state);
  const s = new Float64Array(dState);
  for (const run of r.runs) {
    for (let h = 0; h < heads; h++) {
      const g = groupOf(h);
      for (let p = 0; p < headDim; p++) {
        const at = ((run.slot * heads + h) * headDim + p) * dState;
        for (let n = 0; n < dState; n++) s[n] = run.position === 0 ? 0 : state[at + n]!;
        for (let t = run.start; t < run.start + run.count; t++) {
          const dt = softplusRef(r.dt[t * heads + h]! + r.dtBias[h]!);
          const dA = Math.exp(dt * r.a[h]!);
          const xdt = r.x[(t * heads + h) * headDim + p]! * dt;
          const bc = (t * groups + g) * dState;
          let sum = 0;
          for (let n = 0; n < dState; n++) {
            s[n] = s[n]! * dA + r.b[bc + n]! * xdt;
            sum += r.c[bc + n]! * s[n]!;
          }
          y[(t * heads + h) * headDim + p] = sum;
        }
        state.set(s, at);
      }
    }
  }
  return { y, state };
}
