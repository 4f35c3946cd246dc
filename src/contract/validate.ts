/** Semantic checks on a request, and a stream wrapper that enforces the stream rules. */
import { describe } from "./describe.ts";
import { EngineError } from "./errors.ts";
import { isTokenId } from "./fields.ts";
import { isTerminal } from "./output.ts";
import type {
  LLMEngineOutput,
  OutputOptions,
  PreprocessedRequest,
  SamplingOptions,
  StopConditions,
} from "./types.ts";

function invalid(field: string, why: string): EngineError {
  return new EngineError("InvalidArgument", `request.${field}: ${why}`, { param: field });
}

function checkIds(ids: unknown, field: string): void {
  if (ids === undefined) return;
  if (!Array.isArray(ids)) {
    throw invalid(field, `expected an array of token ids, got ${describe(ids)}`);
  }
  ids.forEach((id, i) => {
    if (!isTokenId(id)) throw invalid(`${field}[${i}]`, `not a token id (${describe(id)})`);
  });
}

const isNum = (v: unknown): v is number => typeof v === "number";

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The object at `field` (required: every engine reads it); anything else is refused. */
function section(v: unknown, field: string): Record<string, unknown> {
  if (!isObject(v)) throw invalid(field, `expected an object, got ${describe(v)}`);
  return v;
}

/**
 * Check a request's values (for callers that build one in code rather than parse it).
 * Throws `InvalidArgument` naming the field.
 */
export function validateRequest(request: PreprocessedRequest): void {
  if (!isObject(request)) {
    throw EngineError.invalidArgument(`request: expected an object, got ${describe(request)}`);
  }
  if (!Array.isArray(request.token_ids)) {
    throw invalid(
      "token_ids",
      `expected an array of token ids, got ${describe(request.token_ids)}`,
    );
  }
  checkIds(request.token_ids, "token_ids");
  checkIds(request.eos_token_ids, "eos_token_ids");
  checkStop(section(request.stop_conditions, "stop_conditions") as StopConditions);
  const s = section(request.sampling_options, "sampling_options") as SamplingOptions;
  const output = section(request.output_options, "output_options") as OutputOptions;
  checkSampling(s);
  checkOutput(output);
}

/** The checks of `stop_conditions`: its strings, token ids and token bounds. */
function checkStop(stop: StopConditions): void {
  if (stop.stop !== undefined) {
    if (!Array.isArray(stop.stop)) {
      throw invalid(
        "stop_conditions.stop",
        `expected an array of strings, got ${describe(stop.stop)}`,
      );
    }
    stop.stop.forEach((x, i) => {
      if (typeof x !== "string") {
        throw invalid(`stop_conditions.stop[${i}]`, `expected a string, got ${describe(x)}`);
      }
    });
  }
  checkIds(stop.stop_token_ids, "stop_conditions.stop_token_ids");
  checkIds(stop.stop_token_ids_hidden, "stop_conditions.stop_token_ids_hidden");
  for (const key of ["max_tokens", "min_tokens"] as const) {
    const v = stop[key];
    if (v !== undefined && !isTokenId(v)) {
      throw invalid(`stop_conditions.${key}`, `must be a non-negative integer, got ${describe(v)}`);
    }
  }
  if (stop.min_tokens !== undefined && stop.max_tokens !== undefined) {
    if (stop.min_tokens > stop.max_tokens) {
      throw invalid(
        "stop_conditions.min_tokens",
        `${stop.min_tokens} is more than max_tokens (${stop.max_tokens})`,
      );
    }
  }
}

/** The checks of `sampling_options`: each knob's range, then its token id lists. */
function checkSampling(s: SamplingOptions): void {
  const { temperature, top_p, top_k, min_p, repetition_penalty, n, best_of } = s;
  if (
    temperature !== undefined &&
    !(isNum(temperature) && temperature >= 0 && Number.isFinite(temperature))
  ) {
    throw invalid(
      "sampling_options.temperature",
      `must be a finite number >= 0, got ${describe(temperature)}`,
    );
  }
  if (top_p !== undefined && !(isNum(top_p) && top_p > 0 && top_p <= 1)) {
    throw invalid("sampling_options.top_p", `must be in (0, 1], got ${describe(top_p)}`);
  }
  if (top_k !== undefined && !(Number.isInteger(top_k) && top_k >= -1)) {
    throw invalid("sampling_options.top_k", `must be an integer >= -1, got ${describe(top_k)}`);
  }
  if (min_p !== undefined && !(isNum(min_p) && min_p >= 0 && min_p <= 1)) {
    throw invalid("sampling_options.min_p", `must be in [0, 1], got ${describe(min_p)}`);
  }
  if (
    repetition_penalty !== undefined &&
    !(isNum(repetition_penalty) && repetition_penalty > 0 && isFinite(repetition_penalty))
  ) {
    throw invalid(
      "sampling_options.repetition_penalty",
      `must be a finite number > 0, got ${describe(repetition_penalty)}`,
    );
  }
  for (
    const [key, v] of [["presence_penalty", s.presence_penalty], [
      "frequency_penalty",
      s.frequency_penalty,
    ]] as const
  ) {
    if (v !== undefined && !(isNum(v) && v >= -2 && v <= 2)) {
      throw invalid(`sampling_options.${key}`, `must be in [-2, 2], got ${describe(v)}`);
    }
  }
  if (n !== undefined && !(Number.isInteger(n) && n >= 1)) {
    throw invalid("sampling_options.n", `must be an integer >= 1, got ${describe(n)}`);
  }
  if (best_of !== undefined && !(Number.isInteger(best_of) && best_of >= (isNum(n) ? n : 1))) {
    throw invalid("sampling_options.best_of", `must be an integer >= n, got ${describe(best_of)}`);
  }
  checkIds(s.allowed_token_ids, "sampling_options.allowed_token_ids");
  const badWords: unknown = s.bad_words_token_ids;
  if (badWords !== undefined && !Array.isArray(badWords)) {
    throw invalid(
      "sampling_options.bad_words_token_ids",
      `expected an array of token id arrays, got ${describe(badWords)}`,
    );
  }
  badWords?.forEach((seq, i) => checkIds(seq, `sampling_options.bad_words_token_ids[${i}]`));
}

/** The checks of `output_options`. */
function checkOutput(output: OutputOptions): void {
  const logprobs = output.logprobs;
  if (logprobs !== undefined && !(Number.isInteger(logprobs) && logprobs >= 0)) {
    throw invalid(
      "output_options.logprobs",
      `must be a non-negative integer, got ${describe(logprobs)}`,
    );
  }
}

/** What a stream did wrong. */
export type StreamViolation = "ChunkAfterTerminal" | "NoTerminalChunk" | "UsageMismatch";

/** A stream broke the contract's stream rules; `kind` names the rule. */
export class StreamContractError extends Error {
  /** Always `"StreamContractError"`. */
  override readonly name = "StreamContractError";
  /**
   * An error naming the broken rule.
   *
   * @param kind The rule that was broken.
   * @param message What the stream did.
   */
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
