/**
 * Speculative decoding by prompt lookup: a sequence's next tokens are drafted from its own
 * history (the most recent earlier occurrence of its last n tokens, and what followed it), and
 * the engine verifies a draft of k tokens in one step of k + 1 tokens, with a logit row for each.
 *
 * Row i is sampled as an ordinary decode step would sample output token `generated + i` (the same
 * parameters, penalty history and random draw), conditioned on the drafts before it. Token i is
 * kept while every earlier row drew the token drafted there: the first row that drew something
 * else ends the run with its own draw. Kept tokens are therefore exactly what decoding one token
 * at a time would have drawn (greedy or sampled, seed for seed), and the output distribution is
 * the model's: for a draft that puts all its mass on one token, rejection sampling accepts it with
 * probability p(draft), and on rejection draws from p without it, which is what "draw from p and
 * compare" does. A sequence that speculates waits for its tokens to be read back before each
 * step (its next draft needs them), so it is not pipelined.
 *
 * @module
 */
import { EngineError } from "../contract/errors.ts";
import type { SampledToken } from "../gpu/kernels/sampling_results.ts";
import type { Sequence } from "./sequence.ts";

/** How a `WebGpuEngine` speculates (off unless given). */
export interface SpeculativeOptions {
  /** `ngram`: drafts looked up in the sequence's own prompt and output (no second model). */
  method: "ngram";
  /** Tokens drafted per step, k (default 4). */
  numSpeculativeTokens?: number;
  /** The longest suffix looked up (default 4 tokens). */
  promptLookupMax?: number;
  /** The shortest suffix looked up (default 2 tokens). */
  promptLookupMin?: number;
}

/** Speculative options with every default filled in, checked. */
export type SpeculativeSettings = Required<SpeculativeOptions>;

/** The most tokens one step may draft for a sequence. */
export const MAX_SPECULATIVE_TOKENS = 16;

/** `o` with its defaults, or `InvalidArgument` naming the bad field. */
export function speculativeSettings(o: SpeculativeOptions): SpeculativeSettings {
  if (o.method !== "ngram") {
    throw EngineError.invalidArgument(
      `speculative.method: only "ngram" (prompt lookup) is built, got ${JSON.stringify(o.method)}`,
    );
  }
  const s: SpeculativeSettings = {
    method: "ngram",
    numSpeculativeTokens: o.numSpeculativeTokens ?? 4,
    promptLookupMax: o.promptLookupMax ?? 4,
    promptLookupMin: o.promptLookupMin ?? 2,
  };
  const int = (name: keyof SpeculativeSettings, v: unknown, lo: number, hi: number) => {
    if (!Number.isInteger(v) || (v as number) < lo || (v as number) > hi) {
      throw EngineError.invalidArgument(
        `speculative.${name}: an integer in [${lo}, ${hi}], got ${JSON.stringify(v)}`,
      );
    }
  };
  int("numSpeculativeTokens", s.numSpeculativeTokens, 1, MAX_SPECULATIVE_TOKENS);
  int("promptLookupMax", s.promptLookupMax, 1, 64);
  int("promptLookupMin", s.promptLookupMin, 1, s.promptLookupMax);
  return s;
}

/**
 * Speculative options from vLLM's `--speculative-config` JSON (snake_case keys: `method`,
 * `num_speculative_tokens`, `prompt_lookup_max`, `prompt_lookup_min`), checked as
 * {@linkcode speculativeSettings} checks them; `InvalidArgument` on bad JSON or another key.
 */
export function speculativeConfig(json: string): SpeculativeOptions {
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch (e) {
    throw EngineError.invalidArgument(`not JSON (${(e as Error).message})`);
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw EngineError.invalidArgument("a JSON object is needed");
  }
  const keys = {
    method: "method",
    num_speculative_tokens: "numSpeculativeTokens",
    prompt_lookup_max: "promptLookupMax",
    prompt_lookup_min: "promptLookupMin",
  } as const;
  const o: Record<string, unknown> = {};
  for (const [k, value] of Object.entries(v)) {
    const name = keys[k as keyof typeof keys];
    if (name === undefined) {
      throw EngineError.invalidArgument(
        `unknown key ${JSON.stringify(k)} (known: ${Object.keys(keys).join(", ")})`,
      );
    }
    o[name] = value;
  }
  speculativeSettings(o as unknown as SpeculativeOptions);
  return o as unknown as SpeculativeOptions;
}

/** What `EngineConfig.runtime_data.speculative` says (snake_case, as on the wire). */
export function speculativeRuntimeData(s: SpeculativeSettings): Record<string, string | number> {
  return {
    method: s.method,
    num_speculative_tokens: s.numSpeculativeTokens,
    prompt_lookup_max: s.promptLookupMax,
    prompt_lookup_min: s.promptLookupMin,
  };
}

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

/** Drafts for the sequences that speculate. */
export interface Drafter {
  /**
   * Whether `seq` tries to speculate at its next token: it then waits for its tokens to be read
   * back (the draft follows them) and asks `propose`; otherwise it decodes as usual, pipelined.
   */
  speculates(seq: Sequence): boolean;
  /** Up to `most` tokens drafted after `seq`'s tokens (all known); none: it decodes plainly. */
  propose(seq: Sequence, most: number): number[];
  /**
   * A draft of `drafted` tokens for `seq` was verified and `accepted` of them kept, where
   * waiting for the sequence's tokens cost what decoding `cost` more tokens pipelined would have.
   */
  verified(seq: Sequence, drafted: number, accepted: number, cost: number): void;
}

/** The most tokens a sequence decodes pipelined before it looks for a draft again. */
export const MAX_DRAFT_BACKOFF = 32;

/**
 * Prompt lookup's drafter. Every sequence whose tokens the GPU may run ahead of speculates; a
 * guided one, or one with multi-token bad words, samples each token once the last is known on
 * the CPU, and is left to do so.
 *
 * Looking for a draft costs a pipeline drain (the sequence's tokens must be read back): where
 * a read-back takes several steps' time (a fast GPU, a tiny model) a draft pays only when more
 * of it is accepted than the steps the drain cost. So a sequence whose lookup found nothing, or
 * whose draft did not pay, decodes pipelined for 1, 2, 4, ... tokens (up to
 * {@linkcode MAX_DRAFT_BACKOFF}) before it looks again; a draft that paid resets that.
 */
export function ngramDrafter(s: SpeculativeSettings): Drafter {
  const state = new WeakMap<Sequence, { misses: number; next: number }>();
  const miss = (seq: Sequence) => {
    const st = state.get(seq) ?? { misses: 0, next: 0 };
    st.misses++;
    st.next = seq.generated + seq.ahead + Math.min(MAX_DRAFT_BACKOFF, 2 ** (st.misses - 1));
    state.set(seq, st);
  };
  return {
    speculates: (seq) => seq.pipelined && seq.generated + seq.ahead >= (state.get(seq)?.next ?? 0),
    propose: (seq, most) => {
      const draft = promptLookup(
        seq.tokens,
        Math.min(most, s.numSpeculativeTokens),
        s.promptLookupMax,
        s.promptLookupMin,
      );
      if (draft.length === 0) miss(seq);
      return draft;
    },
    verified: (seq, _drafted, accepted, cost) => {
      if (accepted === 0 || accepted < cost) miss(seq);
      else state.delete(seq);
    },
  };
}

/** Counters of speculation since the engine started (Dynamo's `SpecDecodeStats`). */
export interface SpeculationCounts {
  /** Tokens drafted per step at most (k); 0 when speculation is off. */
  numSpecTokens: number;
  /** Steps that verified a draft. */
  numDrafts: number;
  /** Draft tokens verified. */
  numDraftTokens: number;
  /** Draft tokens accepted. */
  numAcceptedTokens: number;
  /** Accepted drafts by position in the draft (index 0: the first drafted token). */
  numAcceptedTokensPerPos: number[];
}

export const speculationCounts = (k = 0): SpeculationCounts => ({
  numSpecTokens: k,
  numDrafts: 0,
  numDraftTokens: 0,
  numAcceptedTokens: 0,
  numAcceptedTokensPerPos: Array(k).fill(0),
});

/**
 * Hand a verified draft's rows to `seq`: row i's token is taken while every earlier row drew
 * the token drafted there, and until the sequence ends. The accepted drafts' K/V, written by
 * the step that verified them, now count as computed; the drafter hears how many were
 * accepted against `cost` (see {@linkcode Drafter.verified}). Returns how many drafted tokens
 * were accepted (the tokens taken, less the last, which no draft proposed or whose draft lost).
 */
export function takeVerified(
  seq: Sequence,
  draft: readonly number[],
  rows: readonly SampledToken[],
  counts: SpeculationCounts,
  drafter?: Drafter,
  cost = 0,
): number {
  let taken = 0;
  for (let i = 0; i <= draft.length; i++) {
    const r = rows[i]!;
    seq.accept(r.token, r.logprob, r.top);
    taken++;
    if (seq.finished || i === draft.length || r.token !== draft[i]) break;
  }
  const accepted = taken - 1;
  seq.computed += accepted;
  counts.numDrafts++;
  counts.numDraftTokens += draft.length;
  counts.numAcceptedTokens += accepted;
  for (let i = 0; i < accepted; i++) counts.numAcceptedTokensPerPos[i]!++;
  drafter?.verified(seq, draft.length, accepted, cost);
  return accepted;
}
