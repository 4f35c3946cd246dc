/** What the conformance kit's checks share: their state, requests and deadlines. */
import type { LLMEngine } from "../contract/engine.ts";
import type { EngineConfig, LLMEngineOutput, PreprocessedRequest } from "../contract/types.ts";
import { type AssertionId, failAt } from "./assertions.ts";
import { describe } from "./failure.ts";

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
  /**
   * Run every check even after one failed, reporting each (default false: stop at the first
   * failure, as the seed does). A failed `start` still ends the run: the checks after it need
   * the engine's config.
   */
  keepGoing?: boolean;
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

/** The assertions a stream's errors break: a throw before any chunk, and one after a chunk. */
export interface ErrorIds {
  before: AssertionId;
  after: AssertionId;
}

/**
 * Pull a whole stream; an error before any chunk fails `ids.before`, after one `ids.after`
 * (the detail starting with `label`).
 */
export async function collect(
  stream: () => AsyncIterable<LLMEngineOutput>,
  ids: ErrorIds,
  label = "",
): Promise<LLMEngineOutput[]> {
  const chunks: LLMEngineOutput[] = [];
  try {
    for await (const c of stream()) chunks.push(c);
  } catch (e) {
    const of = label ? `${label}: ` : "";
    throw failAt(chunks.length === 0 ? ids.before : ids.after, of + describe(e));
  }
  return chunks;
}

/** The assertions of a whole stream's shape: it has chunks, and exactly one terminal, last. */
export interface ShapeIds {
  chunks: AssertionId;
  terminal: AssertionId;
  last: AssertionId;
}

/** Check that `chunks` is a whole stream: some chunks, exactly one terminal one, the last. */
export function checkShape(chunks: readonly LLMEngineOutput[], ids: ShapeIds, label = ""): void {
  const of = label ? `${label}: ` : "";
  if (chunks.length === 0) throw failAt(ids.chunks, `${of}the stream yielded no chunk`);
  const terminals = chunks.flatMap((c, i) => (c.finish_reason !== undefined ? [i] : []));
  if (terminals.length === 0) throw failAt(ids.terminal, `${of}no chunk carried finish_reason`);
  if (terminals.length > 1 || terminals[0] !== chunks.length - 1) {
    throw failAt(ids.last, `${of}terminal chunks at [${terminals}] of ${chunks.length}`);
  }
}
