/**
 * A sequence's sampling settings as the sampler kernel and its float64 reference both read them,
 * the greedy threshold, and the tokens `bad_words_token_ids` bans at a step.
 */

/** One sequence's sampling settings, as the reference reads them. */
export interface SamplingParams {
  /** Softmax temperature; 0 is greedy. */
  temperature?: number;
  /** Keep the `top_k` most likely tokens; 0 or less keeps all. */
  top_k?: number;
  /** Keep the smallest set of most likely tokens whose probability reaches `top_p`. */
  top_p?: number;
  /** Drop tokens below `min_p` times the largest probability. */
  min_p?: number;
  /** Divides positive logits (multiplies negative ones) of tokens seen in prompt or output. */
  repetition_penalty?: number;
  /** Subtracted from a logit once per occurrence in the output. */
  frequency_penalty?: number;
  /** Subtracted once from the logit of a token present in the output. */
  presence_penalty?: number;
  /** Only these tokens may be drawn. */
  allowed?: readonly number[];
  /** These tokens may not be drawn. */
  banned?: readonly number[];
}

/** A sequence's tokens, for penalties. */
export interface History {
  /** Prompt then output tokens. */
  tokens: readonly number[];
  /** Index in `tokens` where the output begins. */
  outputStart: number;
}

/**
 * Temperatures below this sample as greedy (vLLM draws the same line). Dividing f32 logits by a
 * smaller temperature can overflow to infinity (1e-38 does for any logit above ~3.4), which
 * would drop every token; at 1e-5 a logit gap of 1e-3 is already a factor e^100.
 */
export const MIN_TEMPERATURE = 1e-5;

/** Whether the parameters ask for the argmax (a temperature below `MIN_TEMPERATURE`, or top-k 1). */
export function isGreedy(p: SamplingParams): boolean {
  return (p.temperature ?? 1) < MIN_TEMPERATURE || p.top_k === 1;
}

/**
 * The tokens `bad_words_token_ids` bans at this step: a one-token bad word always; a longer one
 * bans its last token when the history ends with the rest of it.
 */
export function bannedByBadWords(
  badWords: readonly (readonly number[])[],
  history: readonly number[],
): number[] {
  const out = new Set<number>();
  for (const word of badWords) {
    if (word.length === 0) continue;
    const prefix = word.slice(0, -1);
    const tail = history.slice(history.length - prefix.length);
    if (prefix.length <= history.length && prefix.every((t, i) => tail[i] === t)) {
      out.add(word[word.length - 1]!);
    }
  }
  return [...out];
}
