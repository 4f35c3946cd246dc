/**
 * Speculative decoding: a sequence's next k tokens are drafted, by prompt lookup in its own
 * history (`prompt_lookup.ts`) or by a smaller model of the same tokenizer (`draft_model.ts`),
 * and the engine verifies them in one step of k + 1 tokens, with a logit row for each.
 *
 * Row i is sampled as an ordinary decode step would sample output token `generated + i` (the same
 * parameters, penalty history and random draw), conditioned on the drafts before it. Token i is
 * kept while every earlier row drew the token drafted there: the first row that drew something
 * else ends the run with its own draw. Kept tokens are therefore exactly what decoding one token
 * at a time would have drawn (greedy or sampled, seed for seed), and the output distribution is
 * the model's: for a draft that puts all its mass on one token, rejection sampling accepts it with
 * probability p(draft), and on rejection draws from p without it, which is what "draw from p and
 * compare" does. Both drafters propose one token per position (prompt lookup by construction,
 * the draft model greedily), so this holds for either. A sequence that speculates waits for its
 * tokens to be read back before each step (its next draft needs them), so it is not pipelined.
 *
 * @module
 */
import { EngineError } from "../contract/errors.ts";
import type { SampledToken } from "../gpu/kernels/sampling_results.ts";
import type { ModelFiles } from "../formats/source.ts";
import type { Sequence } from "./sequence.ts";

/** Prompt lookup: drafts from the sequence's own prompt and output (no second model). */
export interface NgramOptions {
  /** Prompt lookup. */
  method: "ngram";
  /** Tokens drafted per step, k (default 4). */
  numSpeculativeTokens?: number;
  /** The longest suffix looked up (default 4 tokens). */
  promptLookupMax?: number;
  /** The shortest suffix looked up (default 2 tokens). */
  promptLookupMin?: number;
}

/**
 * A draft model: a smaller checkpoint of the same tokenizer (its vocabulary no larger than the
 * target's), loaded beside the target on the same device with its own KV cache, drafts k tokens
 * greedily. `M` is how the model is named: files for the engine, a path or `ModelSpec` before.
 */
export interface DraftModelOptions<M = ModelFiles> {
  /** A draft model. */
  method: "draft_model";
  /** The draft model's checkpoint. */
  model: M;
  /** Tokens drafted per step, k (default 4). */
  numSpeculativeTokens?: number;
  /** The draft model's KV cache blocks (default: the engine's own default for that model). */
  kvBlocks?: number;
}

/** How a `WebGpuEngine` speculates (off unless given). */
export type SpeculativeOptions<M = ModelFiles> = NgramOptions | DraftModelOptions<M>;

/** Prompt lookup's options, every default filled in. */
export type NgramSettings = Required<NgramOptions>;
/** A draft model's options, defaults filled in. */
export type DraftModelSettings<M = ModelFiles> =
  & Required<Omit<DraftModelOptions<M>, "kvBlocks">>
  & Pick<DraftModelOptions<M>, "kvBlocks">;
/** Speculative options with every default filled in, checked. */
export type SpeculativeSettings<M = ModelFiles> = NgramSettings | DraftModelSettings<M>;

/** The most tokens one step may draft for a sequence. */
export const MAX_SPECULATIVE_TOKENS = 16;

function checkInt(name: string, v: unknown, lo: number, hi: number): void {
  if (!Number.isInteger(v) || (v as number) < lo || (v as number) > hi) {
    throw EngineError.invalidArgument(
      `speculative.${name}: an integer in [${lo}, ${hi}], got ${JSON.stringify(v)}`,
    );
  }
}

/** `o` with its defaults, or `InvalidArgument` naming the bad field. */
export function speculativeSettings(o: NgramOptions): NgramSettings;
export function speculativeSettings<M>(o: DraftModelOptions<M>): DraftModelSettings<M>;
export function speculativeSettings<M>(o: SpeculativeOptions<M>): SpeculativeSettings<M>;
export function speculativeSettings<M>(o: SpeculativeOptions<M>): SpeculativeSettings<M> {
  const k = o.numSpeculativeTokens ?? 4;
  checkInt("numSpeculativeTokens", k, 1, MAX_SPECULATIVE_TOKENS);
  if (o.method === "draft_model") {
    const m: unknown = o.model;
    if (m === undefined || m === null || m === "") {
      throw EngineError.invalidArgument("speculative.model: the draft model is needed");
    }
    if (o.kvBlocks !== undefined) checkInt("kvBlocks", o.kvBlocks, 1, 2 ** 24);
    return {
      method: "draft_model",
      model: o.model,
      numSpeculativeTokens: k,
      ...(o.kvBlocks === undefined ? {} : { kvBlocks: o.kvBlocks }),
    };
  }
  if (o.method !== "ngram") {
    throw EngineError.invalidArgument(
      `speculative.method: "ngram" (prompt lookup) or "draft_model", got ${
        JSON.stringify((o as { method: unknown }).method)
      }`,
    );
  }
  const s: NgramSettings = {
    method: "ngram",
    numSpeculativeTokens: k,
    promptLookupMax: o.promptLookupMax ?? 4,
    promptLookupMin: o.promptLookupMin ?? 2,
  };
  checkInt("promptLookupMax", s.promptLookupMax, 1, 64);
  checkInt("promptLookupMin", s.promptLookupMin, 1, s.promptLookupMax);
  return s;
}

/**
 * Speculative options from vLLM's `--speculative-config` JSON (snake_case keys: `method`,
 * `model`, `num_speculative_tokens`, `prompt_lookup_max`, `prompt_lookup_min`), checked as
 * {@linkcode speculativeSettings} checks them; `InvalidArgument` on bad JSON or another key. As
 * in vLLM, a `model` without a `method` is a draft model; the model stays the path given.
 */
export function speculativeConfig(json: string): SpeculativeOptions<string> {
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
    model: "model",
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
  if (o.model !== undefined) {
    o.method ??= "draft_model";
    if (o.method !== "draft_model") {
      throw EngineError.invalidArgument(`model: only with method "draft_model"`);
    }
    if (typeof o.model !== "string") throw EngineError.invalidArgument("model: a path is needed");
    if (o.promptLookupMax !== undefined || o.promptLookupMin !== undefined) {
      throw EngineError.invalidArgument('prompt_lookup_max/min: only with method "ngram"');
    }
  }
  speculativeSettings(o as unknown as SpeculativeOptions<string>);
  return o as unknown as SpeculativeOptions<string>;
}

/**
 * What `EngineConfig.runtime_data.speculative` says (snake_case, as on the wire), with `extra`
 * (a draft model's name and KV cache, which only the started engine knows).
 */
export function speculativeRuntimeData(
  s: SpeculativeSettings<unknown>,
  extra: Record<string, string | number> = {},
): Record<string, string | number> {
  return s.method === "ngram"
    ? {
      method: s.method,
      num_speculative_tokens: s.numSpeculativeTokens,
      prompt_lookup_max: s.promptLookupMax,
      prompt_lookup_min: s.promptLookupMin,
    }
    : { method: s.method, num_speculative_tokens: s.numSpeculativeTokens, ...extra };
}

/** Drafts for the sequences that speculate. */
export interface Drafter {
  /**
   * Whether `seq` tries to speculate at its next token: it then waits for its tokens to be read
   * back (the draft follows them) and asks `propose`; otherwise it decodes as usual, pipelined.
   */
  speculates(seq: Sequence): boolean;
  /**
   * Up to `most` tokens drafted after `seq`'s tokens (all known); none: it decodes plainly;
   * undefined: a draft is being made, and `seq` waits for it (the drafter calls its `wake` hook
   * when it is ready).
   */
  propose(seq: Sequence, most: number): number[] | undefined;
  /**
   * A draft of `drafted` tokens for `seq` was verified and `accepted` of them kept, where
   * waiting for the sequence's tokens cost what decoding `cost` more tokens pipelined would have.
   */
  verified(seq: Sequence, drafted: number, accepted: number, cost: number): void;
}

/** The most tokens a sequence decodes pipelined before it looks for a draft again. */
export const MAX_DRAFT_BACKOFF = 32;

/**
 * When a sequence looks for a draft. Looking costs a pipeline drain (the sequence's tokens must
 * be read back), and a draft model's time besides: where that takes several steps' time (a fast
 * GPU, a tiny model) a draft pays only when more of it is accepted than the steps it cost. So a
 * sequence whose lookup found nothing, or whose draft did not pay, decodes pipelined for 1, 2,
 * 4, ... tokens (up to {@linkcode MAX_DRAFT_BACKOFF}) before it looks again; a draft that paid
 * resets that.
 */
export class DraftBackoff {
  readonly #state = new WeakMap<Sequence, { misses: number; next: number }>();

  /** Whether `seq` may look for a draft at its next token. */
  due(seq: Sequence): boolean {
    return seq.generated + seq.ahead >= (this.#state.get(seq)?.next ?? 0);
  }

  /** No draft, or one that did not pay: wait twice as long as last time. */
  miss(seq: Sequence): void {
    const st = this.#state.get(seq) ?? { misses: 0, next: 0 };
    st.misses++;
    st.next = seq.generated + seq.ahead + Math.min(MAX_DRAFT_BACKOFF, 2 ** (st.misses - 1));
    this.#state.set(seq, st);
  }

  /** `accepted` drafted tokens kept where looking cost `cost` steps: a miss unless it paid. */
  verified(seq: Sequence, accepted: number, cost: number): void {
    if (accepted === 0 || accepted < cost) this.miss(seq);
    else this.#state.delete(seq);
  }
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
