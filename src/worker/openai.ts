/**
 * OpenAI-shaped completions over any `LLMEngine`, in process (no HTTP): the request bodies,
 * responses and stream chunks of `/v1/chat/completions` and `/v1/completions`, built by the same
 * code as Kiln's server (`src/server/`). Bad requests fail with `InvalidArgument`.
 */
import type { LLMEngine } from "../contract/engine.ts";
import { EngineError } from "../contract/errors.ts";
import type { RequestMetrics } from "../metrics/request_metrics.ts";
import {
  chunkBody,
  responseBody,
  textAfter,
  type Usage,
  usage,
  usageChunk,
} from "../server/format.ts";
export type { Usage } from "../server/format.ts";
import { type Piece, runChoice } from "../server/generation.ts";
import { HttpError } from "../server/errors.ts";
import { type Job, parseJob } from "../server/requests.ts";
import type { ModelText } from "../text/load.ts";
import { APIUserAbortError } from "./abort_error.ts";
export { APIUserAbortError } from "./abort_error.ts";

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
  /** Nucleus sampling: the smallest set of tokens whose probability reaches `top_p`, in [0, 1]. */
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
}

/** A `/v1/chat/completions` body (one choice: `n` is 1 here). */
export interface ChatCompletionRequest extends SamplingFields {
  /** The conversation, non-empty, rendered with the model's chat template. */
  messages: { role: string; content: string }[];
  /** OpenAI's newer name for `max_tokens`; wins over it when both are given. */
  max_completion_tokens?: number;
  /** `true`: each choice carries the log-probability of every generated token. */
  logprobs?: boolean;
  /** With `logprobs`: also the `top_logprobs` most likely alternatives per token, in [0, 20]. */
  top_logprobs?: number;
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
 * or `cancelled` (the caller's signal fired, or the engine cancelled the request). An engine
 * error is thrown as an `EngineError` instead.
 */
export type FinishReasonText = "stop" | "length" | "cancelled";

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
    /** The new text; `role` only on the first chunk. */
    delta: { role?: "assistant"; content?: string };
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
    /** The generated reply. */
    message: { role: "assistant"; content: string };
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

/** Per-call options: `signal` cancels the request (a stream then ends with `cancelled`). */
export interface RequestOptions {
  /**
   * Cancels the request, also when already aborted (then before any token): a stream ends with a
   * last chunk whose `finish_reason` is `"cancelled"`; a whole answer rejects with an
   * {@linkcode APIUserAbortError}, as the `openai` client's does.
   */
  signal?: AbortSignal;
}

/** What the helper runs on: the engine, the model's text side, and its served name. */
export interface OpenAITarget {
  /** The engine that generates (started). */
  engine: LLMEngine;
  /** The model's tokenizer and chat template. */
  text: ModelText;
  /** The served model's name, the default `model` of requests. */
  model: string;
  /** The context length in tokens: the prompt plus `max_tokens` must fit in it. */
  contextLength: number;
  /** Counts each request in `dynamo_frontend_*` when given. */
  requests?: RequestMetrics;
}

function job(target: OpenAITarget, body: SamplingFields, chat: boolean): Job {
  try {
    return parseJob({ ...body, model: body.model ?? target.model }, chat, target.text, {
      maxN: 1,
      contextLength: target.contextLength,
      maxLogprobs: 20,
    });
  } catch (e) {
    if (e instanceof HttpError) throw EngineError.invalidArgument(e.message);
    throw e;
  }
}

const newId = (prefix: string) => `${prefix}-${crypto.randomUUID().replaceAll("-", "")}`;

/** The pieces of one choice, counted in the request metrics. */
async function* pieces(target: OpenAITarget, job: Job, signal: AbortSignal): AsyncGenerator<Piece> {
  const tracker = target.requests?.startRequest(job.model, job.prompt.length);
  let done = false;
  try {
    for await (const p of runChoice(target.engine, target.text, job, 0, signal)) {
      if (p.tokens > 0) tracker?.tokens(p.tokens);
      yield p;
    }
    done = true;
    tracker?.finish(signal.aborted ? "cancelled" : "success");
  } catch (e) {
    done = true;
    tracker?.finish(signal.aborted ? "cancelled" : "error", (e as Error).name);
    throw e;
  } finally {
    if (!done) tracker?.finish("cancelled"); // the caller stopped reading
  }
}

async function* streamed<T>(
  target: OpenAITarget,
  job: Job,
  signal: AbortSignal,
): AsyncGenerator<T> {
  const id = newId(job.chat ? "chatcmpl" : "cmpl");
  const created = Math.floor(Date.now() / 1000);
  let first = true, offset = 0, tokens = 0;
  for await (const p of pieces(target, job, signal)) {
    tokens += p.tokens;
    const choice = { index: 0, text: p.text, logprobs: p.logprobs, finish: p.finish ?? null };
    yield chunkBody(job, id, created, choice, first, offset) as T;
    first = false;
    offset = textAfter(offset, p.logprobs);
  }
  if (job.includeUsage) yield usageChunk(job, id, created, usage(job.prompt.length, tokens)) as T;
}

/**
 * The whole answer, or a rejection with {@linkcode APIUserAbortError} as soon as `signal` aborts
 * (the request then ends in the engine as cancelled, in the background).
 */
async function whole<T>(target: OpenAITarget, job: Job, signal: AbortSignal): Promise<T> {
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new APIUserAbortError(signal.reason));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  const answer = answerOf<T>(target, job, signal);
  answer.catch(() => {}); // after an abort, how the cancelled request ended is nobody's concern
  aborted.catch(() => {});
  try {
    return await Promise.race([answer, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

async function answerOf<T>(target: OpenAITarget, job: Job, signal: AbortSignal): Promise<T> {
  const choice = {
    index: 0,
    text: "",
    logprobs: [] as Piece["logprobs"],
    finish: null as
      | string
      | null,
  };
  let tokens = 0;
  for await (const p of pieces(target, job, signal)) {
    tokens += p.tokens;
    choice.text += p.text;
    choice.logprobs.push(...p.logprobs);
    if (p.finish) choice.finish = p.finish;
  }
  const id = newId(job.chat ? "chatcmpl" : "cmpl");
  const created = Math.floor(Date.now() / 1000);
  return responseBody(job, id, created, [choice], usage(job.prompt.length, tokens)) as T;
}

const signalOf = (options: RequestOptions) => options.signal ?? new AbortController().signal;

/** `chat.completions.create`, shaped like the `openai` client's. */
export class ChatCompletions {
  /** The engine, text side and name the requests run on. */
  constructor(readonly target: OpenAITarget) {}

  /**
   * Stream (`stream: true`): resolves to an async iterable of chunks, whose iteration throws the
   * engine's error if generation fails. Both forms reject with an `EngineError`
   * (`InvalidArgument`) for a bad body (a field out of range, a prompt that leaves no room in the
   * context).
   */
  create(
    body: ChatCompletionRequest & { stream: true },
    options?: RequestOptions,
  ): Promise<AsyncIterable<ChatCompletionChunk>>;
  /** Answer whole (`stream` false or absent): resolves to the `ChatCompletion`, or rejects with
   * the engine's error, or with {@linkcode APIUserAbortError} once `options.signal` aborts. */
  create(
    body: ChatCompletionRequest & { stream?: false },
    options?: RequestOptions,
  ): Promise<ChatCompletion>;
  create(
    body: ChatCompletionRequest,
    options: RequestOptions = {},
  ): Promise<AsyncIterable<ChatCompletionChunk> | ChatCompletion> {
    try {
      const j = job(this.target, body, true);
      const signal = signalOf(options);
      return j.stream
        ? Promise.resolve(streamed<ChatCompletionChunk>(this.target, j, signal))
        : whole<ChatCompletion>(this.target, j, signal);
    } catch (e) {
      return Promise.reject(e);
    }
  }
}

/** `completions.create` (prompt in, text out), shaped like the `openai` client's. */
export class Completions {
  /** The engine, text side and name the requests run on. */
  constructor(readonly target: OpenAITarget) {}

  /**
   * Stream (`stream: true`): resolves to an async iterable of chunks, whose iteration throws the
   * engine's error if generation fails. Both forms reject with an `EngineError`
   * (`InvalidArgument`) for a bad body.
   */
  create(
    body: CompletionRequest & { stream: true },
    options?: RequestOptions,
  ): Promise<AsyncIterable<Completion>>;
  /** Answer whole (`stream` false or absent): resolves to the `Completion`, or rejects with the
   * engine's error, or with {@linkcode APIUserAbortError} once `options.signal` aborts. */
  create(
    body: CompletionRequest & { stream?: false },
    options?: RequestOptions,
  ): Promise<Completion>;
  create(
    body: CompletionRequest,
    options: RequestOptions = {},
  ): Promise<AsyncIterable<Completion> | Completion> {
    try {
      const j = job(this.target, body, false);
      const signal = signalOf(options);
      return j.stream
        ? Promise.resolve(streamed<Completion>(this.target, j, signal))
        : whole<Completion>(this.target, j, signal);
    } catch (e) {
      return Promise.reject(e);
    }
  }
}

/** A text piece of `generate`: `finish` on the last one. */
export interface TextPiece {
  /** New text, decoded; may be empty while a multi-byte character or a stop string is pending. */
  text: string;
  /** Tokens generated behind this piece. */
  tokens: number;
  /** How the completion ended, on the last piece only. */
  finish?: FinishReasonText;
}

/**
 * The pieces of one completion of `prompt` (a `/v1/completions` body without `prompt`). Throws
 * `EngineError` (`InvalidArgument`) on the first `next()` for a bad body.
 */
export async function* generateText(
  target: OpenAITarget,
  prompt: string | number[],
  body: Omit<CompletionRequest, "prompt" | "stream" | "logprobs">,
  signal: AbortSignal,
): AsyncGenerator<TextPiece> {
  const j = job(target, { ...body, prompt } as SamplingFields, false);
  for await (const p of pieces(target, j, signal)) {
    yield { text: p.text, tokens: p.tokens, ...(p.finish ? { finish: p.finish } : {}) };
  }
}
