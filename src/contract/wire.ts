/**
 * Dynamo's JSON on the wire: parse a `PreprocessedRequest` (validated, unknown fields kept)
 * and write or read an `LLMEngineOutput`.
 */
import { EngineError } from "./errors.ts";
import {
  bad,
  compact,
  defined,
  isObject,
  type Json,
  jsonValue,
  object,
  optBool,
  optInt,
  optNumber,
  optObject,
  optString,
  optStrings,
  optTokenIds,
  optUint,
  tokenIds,
  unknownFields,
} from "./fields.ts";
import type {
  CompletionUsage,
  FinishReason,
  LLMEngineOutput,
  OutputOptions,
  PreprocessedRequest,
  SamplingOptions,
  StopConditions,
  TopLogprob,
} from "./types.ts";
import { validateRequest } from "./validate.ts";

const HEALTH_CHECK = "_HEALTH_CHECK";

const STOP_KEYS = [
  "max_tokens",
  "stop",
  "stop_token_ids",
  "stop_token_ids_hidden",
  "min_tokens",
  "ignore_eos",
] as const;
const SAMPLING_KEYS = [
  "n",
  "best_of",
  "presence_penalty",
  "frequency_penalty",
  "repetition_penalty",
  "temperature",
  "top_p",
  "top_k",
  "min_p",
  "seed",
  "include_stop_str_in_output",
  "guided_decoding",
  "allowed_token_ids",
  "bad_words_token_ids",
] as const;
const OUTPUT_KEYS = ["logprobs", "prompt_logprobs", "skip_special_tokens"] as const;
const REQUEST_KEYS = [
  "model",
  "token_ids",
  "stop_conditions",
  "sampling_options",
  "output_options",
  "eos_token_ids",
  "annotations",
  "routing",
  "extra_args",
  HEALTH_CHECK,
] as const;

function withUnknown<T extends { unknown_fields?: Record<string, unknown> }>(
  value: T,
  obj: Json,
  known: readonly string[],
): T {
  const rest = unknownFields(obj, known);
  if (rest !== undefined) value.unknown_fields = rest;
  return value;
}

function parseStop(obj: Json, path: string): StopConditions {
  return withUnknown(
    defined<StopConditions>({}, {
      max_tokens: optUint(obj, "max_tokens", path),
      stop: optStrings(obj, "stop", path),
      stop_token_ids: optTokenIds(obj, "stop_token_ids", path),
      stop_token_ids_hidden: optTokenIds(obj, "stop_token_ids_hidden", path),
      min_tokens: optUint(obj, "min_tokens", path),
      ignore_eos: optBool(obj, "ignore_eos", path),
    }),
    obj,
    STOP_KEYS,
  );
}

function parseBadWords(obj: Json, path: string): number[][] | undefined {
  const v = obj.bad_words_token_ids;
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw bad(`${path}.bad_words_token_ids`, "an array of token id arrays", v);
  return v.map((seq, i) => tokenIds(seq, `${path}.bad_words_token_ids[${i}]`));
}

function parseSampling(obj: Json, path: string): SamplingOptions {
  return withUnknown(
    defined<SamplingOptions>({}, {
      n: optUint(obj, "n", path),
      best_of: optUint(obj, "best_of", path),
      presence_penalty: optNumber(obj, "presence_penalty", path),
      frequency_penalty: optNumber(obj, "frequency_penalty", path),
      repetition_penalty: optNumber(obj, "repetition_penalty", path),
      temperature: optNumber(obj, "temperature", path),
      top_p: optNumber(obj, "top_p", path),
      top_k: optInt(obj, "top_k", path),
      min_p: optNumber(obj, "min_p", path),
      seed: optInt(obj, "seed", path),
      include_stop_str_in_output: optBool(obj, "include_stop_str_in_output", path),
      guided_decoding: optObject(obj, "guided_decoding", path),
      allowed_token_ids: optTokenIds(obj, "allowed_token_ids", path),
      bad_words_token_ids: parseBadWords(obj, path),
    }),
    obj,
    SAMPLING_KEYS,
  );
}

function parseOutputOptions(obj: Json, path: string): OutputOptions {
  return withUnknown(
    defined<OutputOptions>({}, {
      logprobs: optUint(obj, "logprobs", path),
      prompt_logprobs: optUint(obj, "prompt_logprobs", path),
      skip_special_tokens: optBool(obj, "skip_special_tokens", path),
    }),
    obj,
    OUTPUT_KEYS,
  );
}

/**
 * Parse and validate a request from JSON text or an already-parsed value.
 * Throws `InvalidArgument` naming the first bad field.
 */
export function parseRequest(json: string | unknown): PreprocessedRequest {
  const obj = object(jsonValue(json, "request"), "request");
  if (obj.token_ids === undefined || obj.token_ids === null) {
    throw EngineError.invalidArgument("request.token_ids: missing");
  }
  const annotations = optStrings(obj, "annotations", "request") ?? [];
  const request = withUnknown(
    defined<PreprocessedRequest>({
      model: optString(obj, "model", "request") ?? "",
      token_ids: tokenIds(obj.token_ids, "request.token_ids"),
      stop_conditions: parseStop(
        optObject(obj, "stop_conditions", "request") ?? {},
        "request.stop_conditions",
      ),
      sampling_options: parseSampling(
        optObject(obj, "sampling_options", "request") ?? {},
        "request.sampling_options",
      ),
      output_options: parseOutputOptions(
        optObject(obj, "output_options", "request") ?? {},
        "request.output_options",
      ),
      eos_token_ids: optTokenIds(obj, "eos_token_ids", "request") ?? [],
      annotations,
    }, {
      routing: optObject(obj, "routing", "request"),
      extra_args: optObject(obj, "extra_args", "request"),
      is_probe: optBool(obj, HEALTH_CHECK, "request") === true ? true : undefined,
    }),
    obj,
    REQUEST_KEYS,
  );
  validateRequest(request);
  return request;
}

/** The request as Dynamo's JSON, unknown fields restored where they were. */
export function requestToWire(request: PreprocessedRequest): Record<string, unknown> {
  const { is_probe, stop_conditions, sampling_options, output_options, ...rest } = request;
  const out = compact({
    ...rest,
    stop_conditions: compact({ ...stop_conditions }),
    sampling_options: compact({ ...sampling_options }),
    output_options: compact({ ...output_options }),
  });
  if (is_probe === true) out[HEALTH_CHECK] = true;
  return out;
}

/** Read a finish reason; `abort` is accepted as `cancelled`. */
export function parseFinishReason(value: unknown, path = "finish_reason"): FinishReason {
  switch (value) {
    case "eos":
    case "length":
    case "stop":
    case "cancelled":
    case "content_filter":
      return value;
    case "abort":
      return "cancelled";
  }
  if (isObject(value) && typeof value.error === "string") return { error: value.error };
  throw bad(path, "a finish reason", value);
}

/** Write an output chunk as Dynamo's JSON (absent fields omitted). */
export function toWire(output: LLMEngineOutput): Record<string, unknown> {
  const { completion_usage, ...rest } = output;
  const out = compact({ ...rest });
  if (completion_usage !== undefined) out.completion_usage = compact({ ...completion_usage });
  return out;
}

function parseUsage(obj: Json, path: string): CompletionUsage {
  const need = (k: string) => {
    const v = optUint(obj, k, path);
    if (v === undefined) throw bad(`${path}.${k}`, "a non-negative integer", v);
    return v;
  };
  return withUnknown<CompletionUsage>(
    {
      prompt_tokens: need("prompt_tokens"),
      completion_tokens: need("completion_tokens"),
      total_tokens: need("total_tokens"),
    },
    obj,
    ["prompt_tokens", "completion_tokens", "total_tokens"],
  );
}

const OUTPUT_FIELDS = [
  "token_ids",
  "tokens",
  "text",
  "cum_log_probs",
  "log_probs",
  "top_logprobs",
  "finish_reason",
  "stop_reason",
  "index",
  "completion_usage",
  "extra_args",
];

const isNumber = (v: unknown) => typeof v === "number";

/** An optional array whose items all pass `ok` (absent and `null` read as undefined). */
function optList(
  obj: Json,
  key: string,
  path: string,
  what: string,
  ok: (v: unknown) => boolean,
): unknown[] | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw bad(`${path}.${key}`, `an array of ${what}s`, v);
  v.forEach((x, i) => {
    if (!ok(x)) throw bad(`${path}.${key}[${i}]`, what, x);
  });
  return v;
}

/** Parse an output chunk from Dynamo's JSON. */
export function parseOutput(json: string | unknown): LLMEngineOutput {
  const obj = object(jsonValue(json, "output"), "output");
  const path = "output";
  const stopReason = obj.stop_reason;
  if (
    stopReason !== undefined && stopReason !== null && typeof stopReason !== "string" &&
    typeof stopReason !== "number"
  ) throw bad(`${path}.stop_reason`, "a string or token id", stopReason);
  const usageObj = optObject(obj, "completion_usage", path);
  return withUnknown(
    defined<LLMEngineOutput>({ token_ids: tokenIds(obj.token_ids ?? [], `${path}.token_ids`) }, {
      tokens: optList(
        obj,
        "tokens",
        path,
        "a string or null",
        (t) => t === null || typeof t === "string",
      ) as
        | (string | null)[]
        | undefined,
      text: optString(obj, "text", path),
      cum_log_probs: optNumber(obj, "cum_log_probs", path),
      log_probs: optList(obj, "log_probs", path, "a number", isNumber) as
        | number[]
        | undefined,
      top_logprobs: Array.isArray(obj.top_logprobs)
        ? obj.top_logprobs as TopLogprob[][]
        : undefined,
      finish_reason: obj.finish_reason === undefined || obj.finish_reason === null
        ? undefined
        : parseFinishReason(obj.finish_reason, `${path}.finish_reason`),
      stop_reason: stopReason === null ? undefined : stopReason as string | number | undefined,
      index: optUint(obj, "index", path),
      completion_usage: usageObj === undefined
        ? undefined
        : parseUsage(usageObj, `${path}.completion_usage`),
      extra_args: optObject(obj, "extra_args", path),
    }),
    obj,
    OUTPUT_FIELDS,
  );
}
