/** The request and response shapes of Kiln's in-process OpenAI helpers (`openai.ts`). */
import type { Usage } from "./format.ts";

/** Sampling and stop fields shared by both request forms (OpenAI's names, plus vLLM's). */
export interface SamplingFields {
  /** Echoed as the responses' `model` (default: the served model's name); selects nothing. */
  model?: string;
  /** `true`: `create` resolves to an async iterable of chunks; otherwise to the whole response. */
  stream?: boolean;
  /** `include_usage: true` adds a last chunk with empty `choices` and the token counts. */
  stream_options?: { include_usage?: boolean };
  /**
   * Most tokens to generate, an integer >= 0 (default 16 for completions; for chat, what is left
   * of the context). Must fit in the context after the prompt.
   */
  max_tokens?: number;
  /** Softmax temperature in [0, 2]; 0 is greedy. */
  temperature?: number;
  /** Nucleus sampling: the smallest set of tokens whose probability reaches `top_p`, in (0, 1]. */
  top_p?: number;
  /** Keep only the `top_k` most likely tokens, an integer >= -1; -1 or 0 disables the cut. */
  top_k?: number;
  /** Drop tokens less likely than `min_p` times the most likely one, in [0, 1]. */
  min_p?: number;
  /** Subtracted once from the logit of every token already in the output, in [-2, 2]. */
  presence_penalty?: number;
  /** Subtracted from a token's logit per earlier occurrence in the output, in [-2, 2]. */
  frequency_penalty?: number;
  /** Multiplicative penalty on tokens seen before, in [0.01, 10]; 1 is none. */
  repetition_penalty?: number;
  /** Integer seed of the random draws, for reproducible sampling. */
  seed?: number;
  /** Up to 4 strings that end the text (not included in it); the finish is then `stop`. */
  stop?: string | string[];
  /** Tokens to generate before EOS, a stop token or a stop string may end the text. */
  min_tokens?: number;
  /** Keep generating past EOS tokens, until `max_tokens` or a stop string. */
  ignore_eos?: boolean;
  /**
   * Token ids that end the text (finish `stop`; the token's text is left out unless
   * `include_stop_str_in_output`, as vLLM does); held off until `min_tokens`.
   */
  stop_token_ids?: number[];
  /**
   * `{type: "text"}` (the default), `{type: "json_object"}` (any JSON object) or
   * `{type: "json_schema", json_schema: {name, schema, strict}}`: the output is constrained
   * (Dynamo's `guided_decoding.json`, which `WebGpuEngine` and `OrtEngine` honour with
   * XGrammar); a schema the engine refuses, or an engine that cannot constrain output
   * (`MockEngine`), is an `InvalidArgument` naming `response_format`.
   */
  response_format?:
    | { type: "text" }
    | { type: "json_object" }
    | {
      type: "json_schema";
      json_schema: {
        name: string;
        description?: string;
        schema?: Record<string, unknown>;
        strict?: boolean | null;
      };
    };
}

/** A function the model may call (OpenAI's `tools` entry). */
export interface ChatCompletionTool {
  /** Always `function`. */
  type: "function";
  /** The function: its name (letters, digits, `_`, `-`), what it does, its JSON Schema. */
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/** A function call of a reply, whole (`message.tool_calls`). */
export interface ChatCompletionToolCall {
  /** `call_` and random letters (9 letters or digits for templates that require that). */
  id: string;
  /** Always `function`. */
  type: "function";
  /** The function's name, and its arguments as the JSON text of an object. */
  function: { name: string; arguments: string };
}

/** A part of a call in a stream: the header (`id`, `type`, `name`), then argument text. */
export interface ChatCompletionToolCallDelta {
  /** The call's position among the reply's calls. */
  index: number;
  /** The call's id, on its first delta. */
  id?: string;
  /** `function`, on its first delta. */
  type?: "function";
  /** The name on the first delta; `arguments` text to append on every delta. */
  function: { name?: string; arguments: string };
}

/** One message of a conversation, in OpenAI's form. */
export interface ChatCompletionMessage {
  /** `system`, `user`, `assistant`, `tool`, ... */
  role: string;
  /** Text, or text parts; `null` for an assistant message that only calls functions. */
  content: string | { type: "text"; text: string }[] | null;
  /** An assistant's calls (their `arguments` JSON text). */
  tool_calls?: ChatCompletionToolCall[];
  /** A `tool` message: the id of the call it answers. */
  tool_call_id?: string;
  /** A participant's or the answering function's name. */
  name?: string;
}

/** A `/v1/chat/completions` body (one choice: `n` is 1 here). */
export interface ChatCompletionRequest extends SamplingFields {
  /** The conversation, non-empty, rendered with the model's chat template. */
  messages: ChatCompletionMessage[];
  /**
   * Functions the model may call, rendered by its chat template; calls are read from the output
   * per the template's convention and returned as `tool_calls`.
   */
  tools?: ChatCompletionTool[];
  /**
   * `none` (functions left out of the prompt), `auto` (the default with tools), `required` or
   * `{type: "function", function: {name}}` (the output is constrained to a call).
   */
  tool_choice?: "none" | "auto" | "required" | { type: "function"; function: { name: string } };
  /** `false`: at most one call per reply. */
  parallel_tool_calls?: boolean;
  /** OpenAI's newer name for `max_tokens`; wins over it when both are given. */
  max_completion_tokens?: number;
  /** `true`: each choice carries the log-probability of every generated token. */
  logprobs?: boolean;
  /** With `logprobs`: also the `top_logprobs` most likely alternatives per token, in [0, 20]. */
  top_logprobs?: number;
  /**
   * More variables for the chat template, e.g. `{enable_thinking: false}` (Qwen3, SmolLM3: no
   * reasoning). Not `messages`, `tools`, `documents` or `add_generation_prompt`.
   */
  chat_template_kwargs?: Record<string, unknown>;
  /**
   * The chat template's `reasoning_effort` variable, for a template that reads one (gpt-oss's);
   * refused (`InvalidArgument`) for one that does not.
   */
  reasoning_effort?: "none" | "minimal" | "low" | "medium" | "high";
}

/** A `/v1/completions` body (one choice). */
export interface CompletionRequest extends SamplingFields {
  /** Text (tokenized with the model's tokenizer, no template) or a non-empty array of token ids. */
  prompt: string | number[];
  /** Log-probabilities of the generated tokens with this many alternatives each, in [0, 20]. */
  logprobs?: number;
  /** Put the prompt's text before the completion (not with `logprobs`). */
  echo?: boolean;
}

/**
 * How a choice ended: `stop` (an EOS token or a `stop` string), `length` (`max_tokens` reached),
 * `tool_calls` (the model stopped after calling functions), or `cancelled` (the caller's signal fired, or the engine cancelled the request). An engine
 * error is thrown as an `EngineError` instead.
 */
export type FinishReasonText = "stop" | "length" | "cancelled" | "tool_calls";

/** One streamed chat chunk (`object: "chat.completion.chunk"`). */
export interface ChatCompletionChunk {
  /** `chatcmpl-` or `cmpl-` and a random hex id, the same in every chunk of a stream. */
  id: string;
  /** The type tag, as OpenAI's. */
  object: "chat.completion.chunk";
  /** Creation time, in whole seconds since the Unix epoch. */
  created: number;
  /** The request's `model`, or the served model's name. */
  model: string;
  /** One entry per chunk; empty in the `include_usage` chunk. */
  choices: {
    /** The choice's index: always 0 (one choice per request). */
    index: number;
    /**
     * The new text, reasoning or call parts; `role` only on the first chunk. `reasoning_content`
     * (Dynamo's name) and `reasoning` (vLLM's) carry the same new reasoning text.
     */
    delta: {
      role?: "assistant";
      content?: string;
      reasoning_content?: string;
      reasoning?: string;
      tool_calls?: ChatCompletionToolCallDelta[];
    };
    /** Log-probabilities in OpenAI's shape when the request asked for them, else `null`. */
    logprobs: unknown;
    /** Set on the last chunk of the choice; `null` before it. */
    finish_reason: FinishReasonText | null;
  }[];
  /** Token counts, only on the last chunk and only with `stream_options.include_usage`. */
  usage?: Usage;
}

/** A whole chat response (`object: "chat.completion"`). */
export interface ChatCompletion {
  /** `chatcmpl-` or `cmpl-` and a random hex id, the same in every chunk of a stream. */
  id: string;
  /** The type tag, as OpenAI's. */
  object: "chat.completion";
  /** Creation time, in whole seconds since the Unix epoch. */
  created: number;
  /** The request's `model`, or the served model's name. */
  model: string;
  /** The one choice. */
  choices: {
    /** The choice's index: always 0 (one choice per request). */
    index: number;
    /**
     * The generated reply: `content` is `null` when the reply is only calls or only reasoning;
     * `reasoning_content` (Dynamo's name) and `reasoning` (vLLM's) hold the same reasoning text,
     * when the reply has some.
     */
    message: {
      role: "assistant";
      content: string | null;
      reasoning_content?: string;
      reasoning?: string;
      tool_calls?: ChatCompletionToolCall[];
    };
    /** Log-probabilities in OpenAI's shape when the request asked for them, else `null`. */
    logprobs: unknown;
    /** How the choice ended. */
    finish_reason: FinishReasonText | null;
  }[];
  /** Prompt and generated token counts. */
  usage: Usage;
}

/** A completion, whole or one streamed chunk (`object: "text_completion"`). */
export interface Completion {
  /** `chatcmpl-` or `cmpl-` and a random hex id, the same in every chunk of a stream. */
  id: string;
  /** The type tag, as OpenAI's. */
  object: "text_completion";
  /** Creation time, in whole seconds since the Unix epoch. */
  created: number;
  /** The request's `model`, or the served model's name. */
  model: string;
  /** The one choice; empty in a stream's `include_usage` chunk. */
  choices: {
    /** The choice's index: always 0 (one choice per request). */
    index: number;
    /** The generated text (whole, or this chunk's part of it). */
    text: string;
    /** Log-probabilities in OpenAI's shape when the request asked for them, else `null`. */
    logprobs: unknown;
    /** How the choice ended; in a stream, only on its last chunk (`null` before). */
    finish_reason: FinishReasonText | null;
  }[];
  /** Token counts: always on a whole response; in a stream only with `include_usage`. */
  usage?: Usage;
}
