/** What a request must satisfy before it joins the WebGPU engine's queue. */
import { EngineError } from "../contract/errors.ts";
import { type KvGeometry, kvMisfit } from "../contract/kv_capacity.ts";
import type { PreprocessedRequest } from "../contract/types.ts";
import { validateRequest } from "../contract/validate.ts";
import { MAX_TOP_LOGPROBS } from "../gpu/kernels/sampling.ts";

/**
 * Throw `InvalidArgument` naming the field (and, for a request that can never fit, the numbers);
 * nothing is queued for a request that fails. `blocks`: a paged KV cache's geometry, when the
 * engine has one: a prompt that the whole cache could not hold with one generated token (or
 * `min_tokens` of them) can never run, so it is refused rather than queued (a `max_tokens`
 * beyond the cache is not refused: the sequence ends with `length` when it fills the cache, or
 * runs on past it when the model's window lets it release blocks as it goes).
 */
export function checkRequest(
  request: PreprocessedRequest,
  vocabSize: number,
  context: number,
  blocks?: KvGeometry,
): void {
  validateRequest(request);
  const prompt = request.token_ids;
  if (prompt.length === 0) throw EngineError.invalidArgument("request.token_ids: empty prompt");
  checkVocab(request, vocabSize);
  if (prompt.length >= context) {
    throw EngineError.invalidArgument(
      `request.token_ids: ${prompt.length} tokens leave no room in the context of ${context}`,
    );
  }
  const misfit = blocks && kvMisfit(request, blocks);
  if (misfit) {
    const field = misfit.field === "token_ids" ? "token_ids" : "stop_conditions.min_tokens";
    throw new EngineError("InvalidArgument", `request.${field}: ${misfit.message}`, {
      param: field,
    });
  }
  const n = request.sampling_options.n ?? 1;
  if (n !== 1) {
    throw EngineError.invalidArgument(`request.sampling_options.n: ${n} is not supported (1 only)`);
  }
  refuseUnhonoured(request);
  if ((request.output_options.logprobs ?? 0) > MAX_TOP_LOGPROBS) {
    throw EngineError.invalidArgument(
      `request.output_options.logprobs: at most ${MAX_TOP_LOGPROBS}`,
    );
  }
}

/**
 * Every token id the request names (prompt, EOS, stop tokens, allowed and banned tokens) is one
 * of the model's: an id past the vocabulary could never be sampled, so the condition it sets
 * would silently never hold (or, for a prompt, read past the embedding table).
 */
function checkVocab(request: PreprocessedRequest, vocabSize: number): void {
  const s = request.sampling_options, stop = request.stop_conditions;
  const lists: [string, readonly number[] | undefined][] = [
    ["token_ids", request.token_ids],
    ["eos_token_ids", request.eos_token_ids],
    ["stop_conditions.stop_token_ids", stop.stop_token_ids],
    ["stop_conditions.stop_token_ids_hidden", stop.stop_token_ids_hidden],
    ["sampling_options.allowed_token_ids", s.allowed_token_ids],
    ...(s.bad_words_token_ids ?? []).map((ids, i) =>
      [`sampling_options.bad_words_token_ids[${i}]`, ids] as [string, number[]]
    ),
  ];
  for (const [field, ids] of lists) {
    const bad = ids?.findIndex((t) => t >= vocabSize) ?? -1;
    if (bad >= 0) {
      throw new EngineError(
        "InvalidArgument",
        `request.${field}[${bad}]: ${ids![bad]} >= vocab size ${vocabSize}`,
        { param: field },
      );
    }
  }
}

/**
 * Fields of the contract this engine does not act on are refused rather than ignored. Stop
 * strings, `include_stop_str_in_output` and `skip_special_tokens` are not among them: they act on
 * text, which the layer above the engine produces (Kiln's server, or Dynamo's frontend).
 */
function refuseUnhonoured(request: PreprocessedRequest): void {
  const s = request.sampling_options, o = request.output_options;
  const refuse = (field: string, why: string) =>
    new EngineError("InvalidArgument", `request.${field}: ${why}`, { param: field });
  if ((s.best_of ?? 1) !== 1) {
    throw refuse("sampling_options.best_of", `${s.best_of} is not supported (1 only)`);
  }
  if (o.prompt_logprobs !== undefined) {
    throw refuse("output_options.prompt_logprobs", "prompt logprobs are not supported");
  }
  const sections = [
    ["stop_conditions", request.stop_conditions.unknown_fields],
    ["sampling_options", s.unknown_fields],
    ["output_options", o.unknown_fields],
  ] as const;
  for (const [section, fields] of sections) {
    for (const [key, value] of Object.entries(fields ?? {})) {
      if (!noEffect(value)) {
        throw refuse(`${section}.${key}`, "not a field this engine knows, so it cannot honour it");
      }
    }
  }
}

/**
 * A value that asks for nothing: what Dynamo's frontend sends for an option it leaves unset
 * (`null`), a switch left off (`false`), or an empty list or object. Any other value of a field
 * the engine does not know (a newer Dynamo's `logit_bias`, say) would be silently ignored, so it
 * is refused by name instead.
 */
function noEffect(value: unknown): boolean {
  if (value === null || value === undefined || value === false) return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === "object" && Object.keys(value).length === 0;
}
