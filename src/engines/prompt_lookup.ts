/**
 * Prompt lookup, the drafter that needs no second model: a sequence's next tokens are drafted
 * from its own history, the tokens that followed the most recent earlier occurrence of its last
 * n tokens (see `speculation.ts` for how a draft is verified).
 *
 * @module
 */
import type { Sequence } from "./sequence.ts";
import { DraftBackoff, type Drafter, type NgramSettings } from "./speculation.ts";

/**
 * The `k` tokens that followed the most recent earlier occurrence of the last n tokens of
 * `tokens`, for the longest n from `nMax` down to `nMin` that occurs; none when no suffix recurs.
 * Where the occurrence overlaps the suffix (a period shorter than k), the draft repeats it.
 */
export function promptLookup(
  tokens: readonly number[],
  k: number,
  nMax: number,
  nMin: number,
): number[] {
  const len = tokens.length;
  for (let n = Math.min(nMax, len - 1); n >= nMin; n--) {
    const tail = len - n;
    for (let start = tail - 1; start >= 0; start--) {
      let i = 0;
      while (i < n && tokens[start + i] === tokens[tail + i]) i++;
      if (i === n) {
        // Copied as LZ77 copies: a match that overlaps the suffix repeats its period.
        const draft: number[] = [];
        for (let j = start + n; draft.length < k; j++) {
          draft.push(j < len ? tokens[j]! : draft[j - len]!);
        }
        return draft;
      }
    }
  }
  return [];
}

/**
 * Prompt lookup's drafter. Every sequence whose tokens the GPU may run ahead of speculates when
 * its {@linkcode DraftBackoff} allows; a guided one, or one with multi-token bad words, samples
 * each token once the last is known on the CPU, and is left to do so.
 */
export function ngramDrafter(s: NgramSettings): Drafter {
  const backoff = new DraftBackoff();
  return {
    speculates: (seq: Sequence) => seq.pipelined && backoff.due(seq),
    propose: (seq, most) => {
      const draft = promptLookup(
        seq.tokens,
        Math.min(most, s.numSpeculativeTokens),
        s.promptLookupMax,
        s.promptLookupMin,
      );
      if (draft.length === 0) backoff.miss(seq);
      return draft;
    },
    verified: (seq, _drafted, accepted, cost) => backoff.verified(seq, accepted, cost),
  };
}
