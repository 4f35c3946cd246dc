/** What the conformance kit's checks share: their state, requests and deadlines. */
import type { LLMEngine } from "../contract/engine.ts";
import type { EngineConfig, LLMEngineOutput, PreprocessedRequest } from "../contract/types.ts";
import { ConformanceFailure, describe } from "./failure.ts";

/** Tuning of a conformance run. */
export interface ConformanceOptions {
  /** How long a cancelled stream may take to end (default 2000 ms, as the seed). */
  cancelDeadlineMs?: number;
  /**
   * Upper bound for any other step, so a hanging engine fails instead of hanging (default 120 s);
   * also how long every stream of `kv_cache_overload` may take to end.
   */
  stepTimeoutMs?: number;
  /** Prompt of the generate checks (default `[1, 2, 3]`). */
  prompt?: number[];
}

/** The engine under test, what it reported at start, and the run's options. */
export interface State {
  engine: LLMEngine;
  factory: () => LLMEngine;
  config?: EngineConfig;
  opts: Required<ConformanceOptions>;
}

/** `max_tokens` of the requests a check cancels: far more than any check waits for. */
export const LONG_MAX_TOKENS = 10_000;

/** A request of `maxTokens` with default sampling and no EOS. */
export function request(model: string, prompt: number[], maxTokens: number): PreprocessedRequest {
  return {
    model,
    token_ids: [...prompt],
    stop_conditions: { max_tokens: maxTokens },
    sampling_options: {},
    output_options: {},
    eos_token_ids: [],
    annotations: [],
  };
}

/** Resolve `promise`, or reject with `onTimeout()` after `ms`; the timer never outlives it. */
export async function within<T>(
  promise: Promise<T>,
  ms: number,
  onTimeout: () => Error,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((
    _,
    reject,
  ) => (timer = setTimeout(() => reject(onTimeout()), ms)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Pull a whole stream; an error before any chunk is `GenerateFailed`, after one `StreamYieldedError`. */
export async function collect(
  stream: () => AsyncIterable<LLMEngineOutput>,
): Promise<LLMEngineOutput[]> {
  const chunks: LLMEngineOutput[] = [];
  try {
    for await (const c of stream()) chunks.push(c);
  } catch (e) {
    throw new ConformanceFailure(
      chunks.length === 0 ? "GenerateFailed" : "StreamYieldedError",
      describe(e),
    );
  }
  return chunks;
}
