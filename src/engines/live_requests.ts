/**
 * The requests an engine is streaming, by their `GenerateContext`: what `abort`, `drain` and
 * `cleanup` of every engine built on `Sequence` do to them. A request id is a caller's label
 * (two callers may well send the same one), so it is never the key: `abort(ctx)` reaches the one
 * request that `ctx` started, whatever id any other request carries.
 */
import type { GenerateContext } from "../contract/engine.ts";
import { EngineError } from "../contract/errors.ts";
import type { LLMEngineOutput } from "../contract/types.ts";
import type { Sequence } from "./sequence.ts";

/** Requests admitted, and how they ended (finished + cancelled + failed = started once idle). */
export interface RequestStats {
  /** Requests admitted. */
  started: number;
  /** Ended with a finish reason. */
  finished: number;
  /** Cancelled by their caller, or by the engine stopping. */
  cancelled: number;
  /** Ended with an error. */
  failed: number;
}

/** Live requests by context. */
export class LiveRequests {
  readonly #seqs = new Map<GenerateContext, Sequence>();
  /** Counts over every request `stream` has run. */
  readonly stats: RequestStats = { started: 0, finished: 0, cancelled: 0, failed: 0 };

  /** Requests live now (admitted, and their streams not yet ended). */
  get size(): number {
    return this.#seqs.size;
  }

  /**
   * A request's stream: track `seq` under its context, hand it to the engine's loop with `enqueue` (not
   * for a request whose signal is already aborted, which ends `cancelled` at once, nor for
   * `max_tokens: 0`, which finishes at once), yield its chunks, and on any exit (the end, an
   * error, a consumer that stops pulling) abort it if it is still running (so the engine's abort
   * listener frees it at the loop's next turn), count how it ended and stop tracking it. A
   * context already streaming another request is refused (`InvalidArgument`): one context, one
   * request, or `abort(ctx)` could not say which it means.
   */
  async *stream(seq: Sequence, enqueue: () => void): AsyncGenerator<LLMEngineOutput> {
    const ctx = seq.ctx;
    if (this.#seqs.has(ctx)) {
      const error = EngineError.invalidArgument(
        "this GenerateContext is already streaming a request: make one context per request",
      );
      seq.fail(error);
      throw error;
    }
    this.#seqs.set(ctx, seq);
    this.stats.started++;
    try {
      if (seq.signal.aborted) seq.cancel();
      else if (seq.maxTokens === 0) seq.finishEmpty();
      else enqueue();
      yield* seq.channel.drain();
    } finally {
      if (!seq.finished) seq.abort();
      if (!seq.finished) seq.cancel();
      this.stats[seq.outcome ?? "cancelled"]++;
      this.#seqs.delete(ctx);
    }
  }

  /** Abort the request `ctx` started, if it is live (its stream ends as cancelled). */
  abort(ctx: GenerateContext): void {
    this.#seqs.get(ctx)?.abort();
  }

  /** End every live request's stream with `error`. */
  failAll(error: EngineError): void {
    for (const seq of this.#seqs.values()) seq.fail(error);
  }

  /** Cancel every live request. */
  cancelAll(): void {
    for (const seq of this.#seqs.values()) seq.cancel();
  }

  /** Resolves when every request live now has ended (a drain bounds the wait: `lifecycle.ts`). */
  async ended(): Promise<void> {
    await Promise.all([...this.#seqs.values()].map((s) => s.done));
  }
}
