/** Semantic checks on a request, and a stream wrapper that enforces the stream rules. */
import { EngineError } from "./errors.ts";
import { isTokenId } from "./fields.ts";
import { isTerminal } from "./output.ts";
import type { LLMEngineOutput, PreprocessedRequest } from "./types.ts";

function invalid(field: string, why: string): EngineError {
  return EngineError.invalidArgument(`request.${field}: ${why}`);
}

function checkIds(ids: readonly unknown[] | undefined, field: string): void {
  ids?.forEach((id, i) => {
    if (!isTokenId(id)) throw invalid(`${field}[${i}]`, `not a token id (${String(id)})`);
  });
}

/**
 * Check a request's values (for callers that build one in code rather than parse it).
 * Throws `InvalidArgument` naming the field.
 */
export function validateRequest(request: PreprocessedRequest): void {
  if (!Array.isArray(request.token_ids)) throw invalid("token_ids", "missing");
  checkIds(request.token_ids, "token_ids");
  checkIds(request.eos_token_ids, "eos_token_ids");
  const stop = request.stop_conditions ?? {};
  checkIds(stop.stop_token_ids, "stop_conditions.stop_token_ids");
  checkIds(stop.stop_token_ids_hidden, "stop_conditions.stop_token_ids_hidden");
  for (const key of ["max_tokens", "min_tokens"] as const) {
    const v = stop[key];
    if (v !== undefined && !isTokenId(v)) {
      throw invalid(`stop_conditions.${key}`, `must be a non-negative integer, got ${v}`);
    }
  }
  const s = request.sampling_options ?? {};
  const { temperature, top_p, top_k, min_p, repetition_penalty, n, best_of } = s;
  if (temperature !== undefined && !(temperature >= 0 && Number.isFinite(temperature))) {
    throw invalid(
      "sampling_options.temperature",
      `must be a finite number >= 0, got ${temperature}`,
    );
  }
  if (top_p !== undefined && !(top_p > 0 && top_p <= 1)) {
    throw invalid("sampling_options.top_p", `must be in (0, 1], got ${top_p}`);
  }
  if (top_k !== undefined && !(Number.isInteger(top_k) && top_k >= -1)) {
    throw invalid("sampling_options.top_k", `must be an integer >= -1, got ${top_k}`);
  }
  if (min_p !== undefined && !(min_p >= 0 && min_p <= 1)) {
    throw invalid("sampling_options.min_p", `must be in [0, 1], got ${min_p}`);
  }
  if (
    repetition_penalty !== undefined && !(repetition_penalty > 0 && isFinite(repetition_penalty))
  ) {
    throw invalid(
      "sampling_options.repetition_penalty",
      `must be a finite number > 0, got ${repetition_penalty}`,
    );
  }
  for (
    const [key, v] of [["presence_penalty", s.presence_penalty], [
      "frequency_penalty",
      s.frequency_penalty,
    ]] as const
  ) {
    if (v !== undefined && !(v >= -2 && v <= 2)) {
      throw invalid(`sampling_options.${key}`, `must be in [-2, 2], got ${v}`);
    }
  }
  if (n !== undefined && !(Number.isInteger(n) && n >= 1)) {
    throw invalid("sampling_options.n", `must be an integer >= 1, got ${n}`);
  }
  if (best_of !== undefined && !(Number.isInteger(best_of) && best_of >= (n ?? 1))) {
    throw invalid("sampling_options.best_of", `must be an integer >= n, got ${best_of}`);
  }
  checkIds(s.allowed_token_ids, "sampling_options.allowed_token_ids");
  s.bad_words_token_ids?.forEach((seq, i) =>
    checkIds(seq, `sampling_options.bad_words_token_ids[${i}]`)
  );
  const logprobs = request.output_options?.logprobs;
  if (logprobs !== undefined && !(Number.isInteger(logprobs) && logprobs >= 0)) {
    throw invalid("output_options.logprobs", `must be a non-negative integer, got ${logprobs}`);
  }
}

/** What a stream did wrong. */
export type StreamViolation = "ChunkAfterTerminal" | "NoTerminalChunk" | "UsageMismatch";

export class StreamContractError extends Error {
  override readonly name = "StreamContractError";
  constructor(readonly kind: StreamViolation, message: string) {
    super(`${kind}: ${message}`);
  }
}

/**
 * Pass a stream through unchanged, throwing {@linkcode StreamContractError} on a contract
 * violation: a chunk after the terminal one, no terminal chunk, or terminal usage whose
 * `completion_tokens` differs from the tokens streamed (or whose `prompt_tokens` differs from
 * `promptTokens`, when given). Use it in development builds and tests.
 */
export async function* validateStream(
  stream: AsyncIterable<LLMEngineOutput>,
  options: { promptTokens?: number } = {},
): AsyncGenerator<LLMEngineOutput, void, undefined> {
  let streamed = 0;
  let ended = false;
  for await (const chunk of stream) {
    if (ended) {
      throw new StreamContractError("ChunkAfterTerminal", "a chunk followed the terminal chunk");
    }
    streamed += chunk.token_ids.length;
    if (isTerminal(chunk)) {
      ended = true;
      const u = chunk.completion_usage;
      if (u !== undefined && u.completion_tokens !== streamed) {
        throw new StreamContractError(
          "UsageMismatch",
          `streamed ${streamed} tokens but usage.completion_tokens is ${u.completion_tokens}`,
        );
      }
      if (
        u !== undefined && options.promptTokens !== undefined &&
        u.prompt_tokens !== options.promptTokens
      ) {
        throw new StreamContractError(
          "UsageMismatch",
          `prompt had ${options.promptTokens} tokens but usage.prompt_tokens is ${u.prompt_tokens}`,
        );
      }
    }
    yield chunk;
  }
  if (!ended) throw new StreamContractError("NoTerminalChunk", "the stream ended without one");
}
