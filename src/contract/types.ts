/**
 * The request, output and config types of Dynamo's backend contract.
 * Field names are Dynamo's snake_case wire names, so a value is its own JSON.
 */

/** Fields a parser did not recognise, kept so a round trip leaves them untouched. */
export type UnknownFields = Record<string, unknown>;

/** When generation must stop, beyond the model's EOS tokens. */
export interface StopConditions {
  /** Most tokens to generate (the prompt not counted); the stream ends with `length` there. */
  max_tokens?: number;
  /** Strings that end generation when they appear in the text. */
  stop?: string[];
  /** Token ids that end generation; the stopping token is part of the output. */
  stop_token_ids?: number[];
  /** Token ids that end generation; the stopping token is left out of the output. */
  stop_token_ids_hidden?: number[];
  /** Fewest tokens to generate before EOS or a stop condition may end the stream. */
  min_tokens?: number;
  /** Keep generating past the model's EOS tokens. */
  ignore_eos?: boolean;
  /** Wire fields this version does not know, kept for round trips. */
  unknown_fields?: UnknownFields;
}

/** How the next token is drawn from the logits. */
export interface SamplingOptions {
  /** Completions to return per request (an integer >= 1). */
  n?: number;
  /** Candidates to generate, of which `n` are returned (an integer >= `n`). */
  best_of?: number;
  /** Penalty subtracted from the logit of every token already present in the output. */
  presence_penalty?: number;
  /** Penalty subtracted from a token's logit once per earlier occurrence in the output. */
  frequency_penalty?: number;
  /** Multiplicative penalty (> 0, 1 = none) on the logits of tokens seen before. */
  repetition_penalty?: number;
  /** Softmax temperature (>= 0); 0 means greedy (argmax). */
  temperature?: number;
  /**
   * Nucleus sampling: keep the smallest set of tokens whose probability sums to this, in (0, 1].
   */
  top_p?: number;
  /** Keep only the `top_k` most likely tokens; -1 or 0 disables the cut. */
  top_k?: number;
  /** Drop tokens whose probability is below `min_p` times the most likely one's, in [0, 1]. */
  min_p?: number;
  /** Seed of the request's random draws, for reproducible sampling. */
  seed?: number;
  /** Keep a matched stop string in the output text. */
  include_stop_str_in_output?: boolean;
  /**
   * Structured-output constraints (JSON schema, regex, ...), passed through as Dynamo sends them.
   */
  guided_decoding?: Record<string, unknown>;
  /** Only these token ids may be sampled. */
  allowed_token_ids?: number[];
  /** Token sequences that must not be generated. */
  bad_words_token_ids?: number[][];
  /** Wire fields this version does not know, kept for round trips. */
  unknown_fields?: UnknownFields;
}

/** What each output chunk carries besides token ids. */
export interface OutputOptions {
  /** Number of most likely alternatives to report per generated token, with their log-probs. */
  logprobs?: number;
  /** Number of alternatives to report per prompt token. */
  prompt_logprobs?: number;
  /** Leave special tokens out of detokenised text. */
  skip_special_tokens?: boolean;
  /** Wire fields this version does not know, kept for round trips. */
  unknown_fields?: UnknownFields;
}

/** A tokenised request as Dynamo's preprocessor hands it to a backend. */
export interface PreprocessedRequest {
  /** The model name the request was routed to. */
  model: string;
  /** The prompt, already tokenised. */
  token_ids: number[];
  /** When to stop generating. */
  stop_conditions: StopConditions;
  /** How to sample. */
  sampling_options: SamplingOptions;
  /** What to report per token. */
  output_options: OutputOptions;
  /** Token ids that end the stream with `eos` (unless `ignore_eos`). */
  eos_token_ids: number[];
  /** Dynamo annotation names the frontend asked the backend to answer. */
  annotations: string[];
  /** Router hints (backend instance, KV overlap), passed through. */
  routing?: Record<string, unknown>;
  /** Free-form extra arguments, passed through. */
  extra_args?: Record<string, unknown>;
  /** A health-check probe (`_HEALTH_CHECK: true` on the wire); absent when false. */
  is_probe?: true;
  /** Wire fields this version does not know, kept for round trips. */
  unknown_fields?: UnknownFields;
}

/** Why a stream ended. Wire names are Dynamo's; `abort` is read as `cancelled`. */
export type FinishReason =
  | "eos"
  | "length"
  | "stop"
  | "cancelled"
  | "content_filter"
  | { error: string };

/** Token counts of a finished request. */
export interface CompletionUsage {
  /** Tokens in the prompt. */
  prompt_tokens: number;
  /** Tokens generated. */
  completion_tokens: number;
  /** `prompt_tokens + completion_tokens`. */
  total_tokens: number;
  /** Wire fields this version does not know, kept for round trips. */
  unknown_fields?: UnknownFields;
}

/** One of the most likely alternatives at a generated position. */
export interface TopLogprob {
  /** 0 for the most likely token, then 1, 2, ... */
  rank: number;
  /** The alternative's token id. */
  token_id: number;
  /** The alternative's text, when the engine detokenises. */
  token?: string;
  /** Natural-log probability of the alternative. */
  logprob: number;
}

/** One chunk of a generate() stream. A chunk with `finish_reason` is terminal. */
export interface LLMEngineOutput {
  /** Token ids generated since the previous chunk (possibly none). */
  token_ids: number[];
  /** Each token's text, `null` where a token alone is not valid text. */
  tokens?: (string | null)[];
  /** Text generated since the previous chunk, when the engine detokenises. */
  text?: string;
  /** Sum of the natural-log probabilities of the tokens generated so far. */
  cum_log_probs?: number;
  /** Natural-log probability of each token of `token_ids`. */
  log_probs?: number[];
  /**
   * Per token of `token_ids`, the most likely alternatives: `output_options.logprobs` of them, or
   * fewer when fewer tokens could be drawn (Kiln's engines list none that could not).
   */
  top_logprobs?: TopLogprob[][];
  /** Present on the terminal chunk only: why the stream ended. */
  finish_reason?: FinishReason;
  /** The stop string or stop token id that ended the stream, when one did. */
  stop_reason?: string | number;
  /** Which of the request's `n` choices the chunk belongs to. */
  index?: number;
  /** Token counts, on the terminal chunk. */
  completion_usage?: CompletionUsage;
  /** Free-form extra data, passed through. */
  extra_args?: Record<string, unknown>;
  /** Wire fields this version does not know, kept for round trips. */
  unknown_fields?: UnknownFields;
}

/**
 * Dynamo 1.5's token-pipeline registration (its `LlmRegistration`): the KV cache, batch and
 * data-parallel facts that 1.3 read from `EngineConfig`'s own fields, nested under
 * `EngineConfig.llm`. Every field is optional; one left out is not advertised (the router
 * falls back to its defaults).
 */
export interface LlmRegistration {
  /** Most tokens (prompt plus output) one sequence may hold. */
  context_length?: number;
  /** Tokens per KV-cache block. */
  kv_cache_block_size?: number;
  /** KV-cache blocks the engine allocated. */
  total_kv_blocks?: number;
  /** Most sequences generated concurrently. */
  max_num_seqs?: number;
  /** Most tokens processed in one forward step. */
  max_num_batched_tokens?: number;
  /** Data-parallel ranks this worker hosts (Dynamo's default 1). */
  data_parallel_size?: number;
  /** The first data-parallel rank this worker hosts (Dynamo's default 0). */
  data_parallel_start_rank?: number;
  /** The address decode peers fetch KV from in disaggregated serving (none in Kiln). */
  bootstrap_host?: string;
  /** The port beside `bootstrap_host`. */
  bootstrap_port?: number;
}

/**
 * What start() reports about the loaded model and its capacity. The flat token-pipeline fields
 * are Dynamo 1.3's; `llm` and `model_aliases` are 1.5's, optional, and where both carry a fact
 * they agree (the conformance kit checks it).
 */
export interface EngineConfig {
  /** The model's name. */
  model: string;
  /** The name clients use for the model, when it differs from `model`. */
  served_model_name?: string;
  /** Most tokens (prompt plus output) one sequence may hold. */
  context_length?: number;
  /** Tokens per KV-cache block. */
  kv_cache_block_size?: number;
  /** KV-cache blocks the engine allocated. */
  total_kv_blocks?: number;
  /** Most sequences generated concurrently. */
  max_num_seqs?: number;
  /** Most tokens processed in one forward step. */
  max_num_batched_tokens?: number;
  /** Engine-specific facts (device, dtype, ...), free-form. */
  runtime_data?: Record<string, unknown>;
  /**
   * Dynamo 1.5: the token-pipeline facts nested as 1.5 reads them (default: absent, and a 1.5
   * reader takes them from the flat fields above). Kiln's engines fill both.
   */
  llm?: LlmRegistration;
  /** Dynamo 1.5: more names clients may use for the model (default: none). */
  model_aliases?: string[];
}
