/** Reference for `shaders/short_conv.wgsl`: the causal short convolution, in float64. */

/** One sequence's tokens in a step: `count` tokens from `start`, at positions `position`.. */
export interface ShortConvRun {
  /** The sequence's state slot. */
  slot: number;
  /** Its first token's index in the step. */
  start: number;
  /** Its number of tokens. */
  count: number;
  /** The position of its first token. */
  position: number;
}

/** Inputs of {@linkcode shortConvRef} (layouts as in `ShortConvArgs`). */
export interface ShortConvRefArgs {
  /** Input rows [tokens, rowStride]. */
  input: ArrayLike<number>;
  /** Elements per input row. */
  rowStride: number;
  /** Where x starts in a row. */
  xOffset: number;
  /** "gated": u = B ⊙ x, out = C ⊙ conv(u); "silu": u = x, out = silu(conv(u) + bias). */
  mode: "gated" | "silu";
  /** Where B starts in a row ("gated"). */
  bOffset?: number;
  /** Where C starts in a row ("gated"). */
  cOffset?: number;
  /** Weight [channels, width]; the last tap multiplies the current token. */
  weight: ArrayLike<number>;
  /** Bias [channels] ("silu", optional). */
  bias?: ArrayLike<number>;
  /** State [slots, width-1, channels]: row j of a slot is u at p0 - (width-1) + j. */
  state: ArrayLike<number>;
  /** The step's runs. */
  runs: readonly ShortConvRun[];
  /** Tokens in the step. */
  tokens: number;
  /** Conv channels. */
  channels: number;
  /** Conv taps. */
  width: number;
}

/**
 * The conv of every run: out [tokens, channels] (tokens outside every run stay 0) and the new
 * state (a copy of `state` with each run's slot replaced by u at its last width-1 positions).
 * Each run's u is laid out as one sequence: its slot's old rows (0 for positions below 0), then
 * its tokens' u; output i is the dot product of the weights with the window ending at token i.
 */
export function shortConvRef(a: ShortConvRefArgs): { out: Float64Array; state: Float64Array } {
  const { channels: C, width: W } = a;
  const out = new Float64Array(a.tokens * C);
  const state = Float64Array.from(a.state);
  const at = (t: number, off: number, c: number) => a.input[t * a.rowStride + off + c]!;
  for (const run of a.runs) {
    for (let c = 0; c < C; c++) {
      const seq: number[] = [];
      for (let j = 0; j < W - 1; j++) {
        const q = run.position - (W - 1) + j;
        seq.push(q < 0 ? 0 : a.state[(run.slot * (W - 1) + j) * C + c]!);
      }
      for (let i = 0; i < run.count; i++) {
        const t = run.start + i;
        const x = at(t, a.xOffset, c);
        seq.push(a.mode === "gated" ? at(t, a.bOffset!, c) * x : x);
      }
      for (let i = 0; i < run.count; i++) {
        let y = 0;
        for (let j = 0; j < W; j++) y += a.weight[c * W + j]! * seq[i + j]!;
        const t = run.start + i;
        if (a.mode === "gated") {
          out[t * C + c] = at(t, a.cOffset!, c) * y;
        } else {
          const z = y + (a.bias ? a.bias[c]! : 0);
          out[t * C + c] = z / (1 + Math.exp(-z));
        }
      }
      for (let j = 0; j < W - 1; j++) {
        state[(run.slot * (W - 1) + j) * C + c] = seq[run.count + j]!;
      }
    }
  }
  return { out, state };
}
