/**
 * The draft model's drafter: a smaller model of the same tokenizer, run as an engine of its own
 * beside the target (same device, its own KV cache), drafts each speculating sequence's next k
 * tokens greedily from all of its tokens. The draft engine's prefix cache keeps what it computed
 * for a sequence's last draft, so each draft prefills only the tokens since (the accepted ones,
 * and the tail of a partly filled block).
 *
 * A draft takes the draft model's time, so the sequence it is for waits, out of the target's
 * steps, until the draft is ready (the drafter then wakes the target's step loop); the others go
 * on. That time, in the target's decode steps, counts in the cost a draft must repay (see
 * {@linkcode DraftBackoff}).
 *
 * @module
 */
import { type LLMEngine, RequestContext } from "../contract/engine.ts";
import type { PreprocessedRequest } from "../contract/types.ts";
import type { Sequence } from "./sequence.ts";
import { DraftBackoff, type Drafter } from "./speculation.ts";

/** The engine that drafts, and what it can take. */
export interface DraftEngine {
  /** A started engine on the draft model. */
  engine: LLMEngine;
  /** The draft model's vocabulary: a sequence holding a token past it is not drafted for. */
  vocabSize: number;
  /** The draft model's context: a sequence that would pass it is not drafted for. */
  context: number;
}

/** What the drafter needs from the target's step loop. */
export interface DraftHooks {
  /** A draft is ready (or failed): build a step again. */
  wake(): void;
  /** The target's time per pipelined decode step in ms, once known (to price a draft's wait). */
  stepMs(): number | undefined;
  /** The clock a draft's time is read from, in ms (default `performance.now`; tests fake it). */
  now?(): number;
}

/** A draft in the making, or made, for a sequence of `length` tokens. */
interface Job {
  length: number;
  tokens: number[] | undefined;
  /** How long it took (ms), once made. */
  ms: number;
}

/** The draft engine's greedy continuation of `tokens`, `n` tokens long (EOS ignored). */
export async function draftTokens(
  engine: LLMEngine,
  tokens: readonly number[],
  n: number,
  ctx: RequestContext,
): Promise<number[]> {
  const req: PreprocessedRequest = {
    model: "draft",
    token_ids: [...tokens],
    stop_conditions: { max_tokens: n, ignore_eos: true },
    sampling_options: { temperature: 0 },
    output_options: {},
    eos_token_ids: [],
    annotations: [],
  };
  const out: number[] = [];
  for await (const chunk of engine.generate(req, ctx)) out.push(...chunk.token_ids);
  return out;
}

/**
 * A drafter over `draft`, drafting up to `k` tokens. A draft that fails (the draft engine
 * stopped, or refused the request) is a miss, as a lookup that found nothing is.
 */
export function modelDrafter(k: number, draft: DraftEngine, hooks: DraftHooks): Drafter {
  const backoff = new DraftBackoff();
  const jobs = new WeakMap<Sequence, Job>();
  /** The wait of each sequence's last draft, in the target's steps. */
  const waited = new WeakMap<Sequence, number>();
  const start = (seq: Sequence, n: number) => {
    const job: Job = { length: seq.tokens.length, tokens: undefined, ms: 0 };
    jobs.set(seq, job);
    const now = hooks.now ?? (() => performance.now());
    const t0 = now();
    draftTokens(draft.engine, seq.tokens, n, new RequestContext({ signal: seq.signal }))
      .catch(() => [])
      .then((tokens) => {
        job.tokens = tokens;
        job.ms = now() - t0;
        hooks.wake();
      });
  };
  const draftable = (seq: Sequence, n: number) =>
    seq.tokens.length + n <= draft.context && seq.tokens.every((t) => t < draft.vocabSize);
  return {
    speculates: (seq) => seq.pipelined && backoff.due(seq),
    propose: (seq, most) => {
      const job = jobs.get(seq);
      if (job === undefined || job.length !== seq.tokens.length) {
        const n = Math.min(most, k);
        if (!draftable(seq, n)) {
          backoff.miss(seq);
          return [];
        }
        start(seq, n);
        return undefined;
      }
      if (job.tokens === undefined) return undefined;
      jobs.delete(seq);
      const stepMs = hooks.stepMs();
      waited.set(seq, stepMs ? job.ms / stepMs : 0);
      if (job.tokens.length === 0) backoff.miss(seq);
      return job.tokens.slice(0, most);
    },
    verified: (seq, _drafted, accepted, cost) =>
      backoff.verified(seq, accepted, cost + (waited.get(seq) ?? 0)),
  };
}
