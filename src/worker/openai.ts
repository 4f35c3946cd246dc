/**
 * OpenAI-shaped completions over any `LLMEngine`, in process (no HTTP): the request bodies,
 * responses and stream chunks of `/v1/chat/completions` and `/v1/completions`, built by the same
 * code as Kiln's server (`src/server/`). Bad requests fail with `InvalidArgument`.
 */
import type { LLMEngine } from "../contract/engine.ts";
import { EngineError } from "../contract/errors.ts";
import type { RequestMetrics } from "../metrics/request_metrics.ts";
import { chunkBody, responseBody, type Usage, usage, usageChunk } from "../server/format.ts";
import { type Piece, runChoice } from "../server/generation.ts";
import { HttpError } from "../server/errors.ts";
import { type Job, parseJob } from "../server/requests.ts";
import type { ModelText } from "../text/load.ts";

/** Sampling and stop fields shared by both request forms (OpenAI's names, plus vLLM's). */
export interface SamplingFields {
  /** The served model's name; defaults to it. */
  model?: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  min_p?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
  repetition_penalty?: number;
  seed?: number;
  stop?: string | string[];
  min_tokens?: number;
  ignore_eos?: boolean;
}

/** A `/v1/chat/completions` body (one choice: `n` is 1 here). */
export interface ChatCompletionRequest extends SamplingFields {
  messages: { role: string; content: string }[];
  max_completion_tokens?: number;
  logprobs?: boolean;
  top_logprobs?: number;
}

/** A `/v1/completions` body (one choice). */
export interface CompletionRequest extends SamplingFields {
  prompt: string | number[];
  logprobs?: number;
}

/** How a choice ended: OpenAI's reasons, and `cancelled` when the caller's signal fired. */
export type FinishReasonText = "stop" | "length" | "cancelled";

/** One streamed chat chunk (`object: "chat.completion.chunk"`). */
export interface ChatCompletionChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: {
    index: number;
    delta: { role?: "assistant"; content?: string };
    logprobs: unknown;
    finish_reason: FinishReasonText | null;
  }[];
  usage?: Usage;
}

/** A whole chat response (`object: "chat.completion"`). */
export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: {
    index: number;
    message: { role: "assistant"; content: string };
    logprobs: unknown;
    finish_reason: FinishReasonText | null;
  }[];
  usage: Usage;
}

/** A completion, whole or one streamed chunk (`object: "text_completion"`). */
export interface Completion {
  id: string;
  object: "text_completion";
  created: number;
  model: string;
  choices: {
    index: number;
    text: string;
    logprobs: unknown;
    finish_reason: FinishReasonText | null;
  }[];
  usage?: Usage;
}

/** Per-call options: `signal` cancels the request (a stream then ends with `cancelled`). */
export interface RequestOptions {
  signal?: AbortSignal;
}

/** What the helper runs on: the engine, the model's text side, and its served name. */
export interface OpenAITarget {
  engine: LLMEngine;
  text: ModelText;
  model: string;
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
    offset += p.text.length;
  }
  if (job.includeUsage) yield usageChunk(job, id, created, usage(job.prompt.length, tokens)) as T;
}

async function whole<T>(target: OpenAITarget, job: Job, signal: AbortSignal): Promise<T> {
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
  constructor(readonly target: OpenAITarget) {}

  /** Stream chunks (`stream: true`) or answer whole. */
  create(
    body: ChatCompletionRequest & { stream: true },
    options?: RequestOptions,
  ): Promise<AsyncIterable<ChatCompletionChunk>>;
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
  constructor(readonly target: OpenAITarget) {}

  /** Stream chunks (`stream: true`) or answer whole. */
  create(
    body: CompletionRequest & { stream: true },
    options?: RequestOptions,
  ): Promise<AsyncIterable<Completion>>;
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
  text: string;
  tokens: number;
  finish?: FinishReasonText;
}

/** The pieces of one completion of `prompt` (a `/v1/completions` body without `prompt`). */
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
