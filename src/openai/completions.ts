/**
 * OpenAI-shaped completions over any `LLMEngine`, in process (no HTTP): the request bodies,
 * responses and stream chunks of `/v1/chat/completions` and `/v1/completions`, built by the same
 * code as Kiln's server: thin wrappers over the serving layer (`serving.ts`), which `src/server/`
 * serves over HTTP. Bad requests fail with `InvalidArgument` naming the field (`param`).
 */
import type { LLMEngine } from "../contract/engine.ts";
import type { RequestMetrics } from "../metrics/request_metrics.ts";
import type { ModelText } from "../text/load.ts";
import { type Job, parseJob } from "./requests.ts";
import { Serving, untilAborted } from "./serving.ts";
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  Completion,
  CompletionRequest,
  FinishReasonText,
  SamplingFields,
} from "./types.ts";
export { APIUserAbortError } from "./abort_error.ts";
export type { Usage } from "./format.ts";
export type * from "./types.ts";

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
  return parseJob({ ...body, model: body.model ?? target.model }, chat, target.text, {
    maxN: 1,
    contextLength: target.contextLength,
    maxLogprobs: 20,
  });
}

/**
 * The answer of `job` in the form `create` resolves to: a chunk stream (held until its first part
 * when constrained, so an engine that refuses the constraint rejects `create`, as the server
 * answers 400 before a stream), or the whole answer, rejecting with {@linkcode APIUserAbortError}
 * as soon as `signal` aborts.
 */
function answer<T, C>(
  target: OpenAITarget,
  job: Job,
  signal: AbortSignal,
): Promise<AsyncIterable<C> | T> {
  const serving = new Serving(target);
  return job.stream
    ? serving.stream(job, signal) as Promise<AsyncIterable<C>>
    : untilAborted(serving.whole(job, signal), signal) as Promise<T>;
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
      return answer<ChatCompletion, ChatCompletionChunk>(this.target, j, signalOf(options));
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
      return answer<Completion, Completion>(this.target, j, signalOf(options));
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
  for await (const p of new Serving(target).parts(j, signal)) {
    const finish = p.finish as FinishReasonText | null;
    yield { text: p.text, tokens: p.tokens, ...(finish ? { finish } : {}) };
  }
}
