/**
 * One request's `dynamo_frontend_*` accounting, the same for `serve` and `openModel`: in flight
 * from admission, tokens as each choice streams them, and one count when it ends: `cancelled`
 * once its signal has aborted (or its reader stopped), `error` with OpenAI's error type as
 * `error_type` (see {@linkcode openAIError}), else `success`.
 */
import type { LLMEngine } from "../contract/engine.ts";
import type { RequestMetrics, RequestTracker } from "../metrics/request_metrics.ts";
import type { ModelText } from "../text/load.ts";
import { openAIError } from "./errors.ts";
import { type Piece, runChoice } from "./generation.ts";
import type { Job } from "./requests.ts";

/**
 * A request refused before it reached the engine (a bad body, auth, overload): one `error` count
 * labelled `errorType` (OpenAI's error type), with no time or tokens.
 */
export function countRefused(requests: RequestMetrics, model: string, errorType: string): void {
  requests.requests.inc(1, { model, status: "error", error_type: errorType });
}

/** A request admitted to the engine, counted in `requests` (when given). */
export class TrackedRequest {
  readonly #tracker: RequestTracker | undefined;

  /** Counts `job` in flight now. */
  constructor(requests: RequestMetrics | undefined, readonly job: Job) {
    this.#tracker = requests?.startRequest(job.model, job.promptTokens);
  }

  /** Choice `i`'s pieces (see {@linkcode runChoice}), their tokens counted as they come. */
  async *choice(
    engine: LLMEngine,
    text: ModelText,
    i: number,
    signal: AbortSignal,
  ): AsyncGenerator<Piece> {
    for await (const p of runChoice(engine, text, this.job, i, signal)) {
      if (p.tokens > 0) this.#tracker?.tokens(p.tokens);
      yield p;
    }
  }

  /** Every choice ended: `success`, or `cancelled` when `signal` aborted. */
  succeeded(signal: AbortSignal): void {
    this.#tracker?.finish(signal.aborted ? "cancelled" : "success");
  }

  /** A choice failed with `error`: `error` by its OpenAI type, or `cancelled` when `signal` aborted. */
  failed(signal: AbortSignal, error: unknown): void {
    if (signal.aborted) this.#tracker?.finish("cancelled");
    else this.#tracker?.finish("error", openAIError(error).type);
  }

  /** The reader stopped before the end: `cancelled` (nothing, once counted). */
  abandoned(): void {
    this.#tracker?.finish("cancelled");
  }

  /**
   * `parts` as they come, the request counted by how they end: `success`, `error` by its OpenAI
   * type, `cancelled` when `signal` aborted or the consumer stops pulling.
   */
  async *counted<T>(parts: AsyncIterable<T>, signal: AbortSignal): AsyncGenerator<T> {
    try {
      yield* parts;
      this.succeeded(signal);
    } catch (e) {
      this.failed(signal, e);
      throw e;
    } finally {
      this.abandoned(); // ignored once counted
    }
  }
}
