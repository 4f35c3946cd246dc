/**
 * The request, output and config types of Dynamo's backend contract.
 * Field names are Dynamo's snake_case wire names, so a value is its own JSON.
 */

/** Fields a parser did not recognise, kept so a round trip leaves them untouched. */
export type UnknownFields = Record<string, unknown>;

export interface StopConditions {
  max_tokens?: number;
  stop?: string[];
  stop_token_ids?: number[];
  stop_token_ids_hidden?: number[];
  min_tokens?: number;
  ignore_eos?: boolean;
  unknown_fields?: UnknownFields;
}

export interface SamplingOptions {
  n?: number;
  best_of?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
  repetition_penalty?: number;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  min_p?: number;
  seed?: number;
  include_stop_str_in_output?: boolean;
  guided_decoding?: Record<string, unknown>;
  allowed_token_ids?: number[];
  bad_words_token_ids?: number[][];
  unknown_fields?: UnknownFields;
}

export interface OutputOptions {
  logprobs?: number;
  prompt_logprobs?: number;
  skip_special_tokens?: boolean;
  unknown_fields?: UnknownFields;
}

/** A tokenised request as Dynamo's preprocessor hands it to a backend. */
export interface PreprocessedRequest {
  model: string;
  token_ids: number[];
  stop_conditions: StopConditions;
  sampling_options: SamplingOptions;
  output_options: OutputOptions;
  eos_token_ids: number[];
  annotations: string[];
  routing?: Record<string, unknown>;
  extra_args?: Record<string, unknown>;
  /** A health-check probe (`_HEALTH_CHECK: true` on the wire); absent when false. */
  is_probe?: true;
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

export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  unknown_fields?: UnknownFields;
}

export interface TopLogprob {
  rank: number;
  token_id: number;
  token?: string;
  logprob: number;
}

/** One chunk of a generate() stream. A chunk with `finish_reason` is terminal. */
export interface LLMEngineOutput {
  token_ids: number[];
  tokens?: (string | null)[];
  text?: string;
  cum_log_probs?: number;
  log_probs?: number[];
  top_logprobs?: TopLogprob[][];
  finish_reason?: FinishReason;
  /** The stop string or stop token id that ended the stream, when one did. */
  stop_reason?: string | number;
  index?: number;
  completion_usage?: CompletionUsage;
  extra_args?: Record<string, unknown>;
  unknown_fields?: UnknownFields;
}

/** What start() reports about the loaded model and its capacity. */
export interface EngineConfig {
  model: string;
  served_model_name?: string;
  context_length?: number;
  kv_cache_block_size?: number;
  total_kv_blocks?: number;
  max_num_seqs?: number;
  max_num_batched_tokens?: number;
  runtime_data?: Record<string, unknown>;
}
