/**
 * Float64 reference of the gated delta rule (Qwen3.5's linear attention), recurrent form, over
 * plain arrays with the step's runs given explicitly.
 *
 * For each value head h, with key head kh (see {@linkcode DeltaRefShape.headMap}) and the state
 * a matrix S [kDim][vDim], each token of a run does, in this order:
 *   S ← exp(g)·S;  u = Sᵀk;  d = beta·(v − u);  S ← S + k dᵀ;  o = Sᵀq / sqrt(kDim).
 * Stored states are laid out `state[((slot·vHeads + h)·vDim + j)·kDim + i] = S[i][j]`.
 */

/** Heads and dims of one call. */
export interface DeltaRefShape {
  /** Key (and query) heads. */
  kHeads: number;
  /** Value heads, a multiple of kHeads. */
  vHeads: number;
  /** Key head dim. */
  kDim: number;
  /** Value head dim. */
  vDim: number;
  /** "tiled": value head h reads key head h mod kHeads; "grouped": floor(h / (vHeads/kHeads)). */
  headMap: "tiled" | "grouped";
}

/** One sequence's tokens in the step: `count` tokens from index `start`, positions from `position`. */
export interface DeltaRun {
  /** The sequence's state slot. */
  slot: number;
  /** Its first token's index in the step. */
  start: number;
  /** Its token count. */
  count: number;
  /** Its first token's position (0: the state starts from zeros). */
  position: number;
}

/** Dense inputs of {@linkcode gatedDeltaNetRef} (token-major, no padding). */
export interface DeltaRefInputs {
  /** [tokens, kHeads, kDim]. */
  q: ArrayLike<number>;
  /** [tokens, kHeads, kDim]. */
  k: ArrayLike<number>;
  /** [tokens, vHeads, vDim]. */
  v: ArrayLike<number>;
  /** Log decay [tokens, vHeads]. */
  g: ArrayLike<number>;
  /** [tokens, vHeads], already sigmoid'ed. */
  beta: ArrayLike<number>;
}

/** The key head value head `h` reads. */
export function deltaKeyHead(s: DeltaRefShape, h: number): number {
  return s.headMap === "tiled" ? h % s.kHeads : Math.floor(h / (s.vHeads / s.kHeads));
}

/** S [kDim][vDim] of (slot, h) from the stored layout (zeros when `fresh`). */
function loadState(
  s: DeltaRefShape,
  state: ArrayLike<number>,
  slot: number,
  h: number,
  fresh: boolean,
): number[][] {
  const m: number[][] = [];
  for (let i = 0; i < s.kDim; i++) {
    m.push([]);
    for (let j = 0; j < s.vDim; j++) {
      m[i]!.push(fresh ? 0 : state[((slot * s.vHeads + h) * s.vDim + j) * s.kDim + i]!);
    }
  }
  return m;
}

/** One token of value head h: updates `m` in place, writes `o` (vDim values) at `out[at..]`. */
function step(
  s: DeltaRefShape,
  x: DeltaRefInputs,
  m: number[][],
  t: number,
  h: number,
  out: Float64Array,
): void {
  const kh = deltaKeyHead(s, h);
  const kv = (a: ArrayLike<number>, i: number) => a[(t * s.kHeads + kh) * s.kDim + i]!;
  const decay = Math.exp(x.g[t * s.vHeads + h]!);
  const beta = x.beta[t * s.vHeads + h]!;
  for (const row of m) for (let j = 0; j < s.vDim; j++) row[j]! *= decay;
  const d: number[] = [];
  for (let j = 0; j < s.vDim; j++) {
    let u = 0;
    for (let i = 0; i < s.kDim; i++) u += m[i]![j]! * kv(x.k, i);
    d.push(beta * (x.v[(t * s.vHeads + h) * s.vDim + j]! - u));
  }
  for (let i = 0; i < s.kDim; i++) {
    for (let j = 0; j < s.vDim; j++) m[i]![j]! += kv(x.k, i) * d[j]!;
  }
  const scale = 1 / Math.sqrt(s.kDim);
  for (let j = 0; j < s.vDim; j++) {
    let o = 0;
    for (let i = 0; i < s.kDim; i++) o += m[i]![j]! * kv(x.q, i);
    out[(t * s.vHeads + h) * s.vDim + j] = o * scale;
  }
}

/**
 * Run the gated delta rule over `runs`: returns the output [tokens, vHeads, vDim] (zeros for
 * tokens in no run) and the state after the step (a copy of `state` with each run's slot
 * replaced by its final state).
 */
export function gatedDeltaNetRef(
  s: DeltaRefShape,
  x: DeltaRefInputs,
  state: ArrayLike<number>,
  runs: readonly DeltaRun[],
  tokens: number,
): { out: Float64Array; state: Float64Array } {
  const out = new Float64Array(tokens * s.vHeads * s.vDim);
  const next = Float64Array.from(state);
  for (const r of runs) {
    for (let h = 0; h < s.vHeads; h++) {
      const m = loadState(s, state, r.slot, h, r.position === 0);
      for (let t = r.start; t < r.start + r.count; t++) step(s, x, m, t, h, out);
      for (let i = 0; i < s.kDim; i++) {
        for (let j = 0; j < s.vDim; j++) {
          next[((r.slot * s.vHeads + h) * s.vDim + j) * s.kDim + i] = m[i]![j]!;
        }
      }
    }
  }
  return { out, state: next };
}
