/** The sampler's results as read back: chosen tokens, their logprobs, the top alternatives. */

/** The most alternatives a step reports logprobs for. */
export const MAX_TOP_LOGPROBS = 20;

/** The id that ends a shorter list of alternatives (and the token of a row left none). */
const END = 0xffffffff;

/** One sequence's sampled token. */
export interface SampledToken {
  /** The token id. */
  token: number;
  /** Its natural-log probability under the distribution it was drawn from. */
  logprob: number;
  /**
   * The most likely alternatives and their logprobs, when asked for: as many as were asked for,
   * or fewer when fewer tokens could be drawn (never one that could not).
   */
  top?: { ids: Uint32Array; logprobs: Float32Array };
}

/** A batch's results, as read back. */
export interface SampleResult {
  /** Sampled token id per sequence. */
  tokens: Uint32Array;
  /** Natural-log probability of each sampled token. */
  logprobs: Float32Array;
  /**
   * Per sequence, `MAX_TOP_LOGPROBS` alternative ids; a shorter list is followed by 0xffffffff
   * (`NO_TOKEN`) to the end.
   */
  topIds: Uint32Array;
  /** Per sequence, the logprobs of `topIds`. */
  topLogprobs: Float32Array;
  /** Final distributions `[seqs * vocab]`, when asked for. */
  probs?: Float32Array;
}

/** Unpack the `result` and `top` buffers of `n` sequences. */
export function decodeResults(
  result: ArrayBuffer,
  top: ArrayBuffer,
  n: number,
  probs?: ArrayBuffer,
): SampleResult {
  const r = new Uint32Array(result), rf = new Float32Array(result);
  const t = new Uint32Array(top), tf = new Float32Array(top);
  const out: SampleResult = {
    tokens: new Uint32Array(n),
    logprobs: new Float32Array(n),
    topIds: new Uint32Array(n * MAX_TOP_LOGPROBS),
    topLogprobs: new Float32Array(n * MAX_TOP_LOGPROBS),
  };
  for (let s = 0; s < n; s++) {
    out.tokens[s] = r[2 * s]!;
    out.logprobs[s] = rf[2 * s + 1]!;
    const base = s * 2 * MAX_TOP_LOGPROBS;
    out.topIds.set(t.subarray(base, base + MAX_TOP_LOGPROBS), s * MAX_TOP_LOGPROBS);
    out.topLogprobs.set(
      tf.subarray(base + MAX_TOP_LOGPROBS, base + 2 * MAX_TOP_LOGPROBS),
      s * MAX_TOP_LOGPROBS,
    );
  }
  if (probs) out.probs = new Float32Array(probs);
  return out;
}

/**
 * The chosen tokens (and top alternatives, each list cut where it ends) of `n` sequences from
 * `result` (and `top`) bytes.
 */
export function decodeSampled(
  result: ArrayBuffer,
  top: ArrayBuffer | undefined,
  n: number,
): SampledToken[] {
  const u = new Uint32Array(result), f = new Float32Array(result);
  const tu = top && new Uint32Array(top), tf = top && new Float32Array(top);
  return Array.from({ length: n }, (_, s) => {
    const out: SampledToken = { token: u[2 * s]!, logprob: f[2 * s + 1]! };
    if (tu && tf) {
      const base = s * 2 * MAX_TOP_LOGPROBS;
      const ids = tu.subarray(base, base + MAX_TOP_LOGPROBS);
      const n = ids.indexOf(END) < 0 ? MAX_TOP_LOGPROBS : ids.indexOf(END);
      out.top = {
        ids: ids.subarray(0, n),
        logprobs: tf.subarray(base + MAX_TOP_LOGPROBS, base + MAX_TOP_LOGPROBS + n),
      };
    }
    return out;
  });
}
