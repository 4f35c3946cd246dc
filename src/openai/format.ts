/** OpenAI response bodies and stream chunks for completions and chat completions. */
import type { Piece, TokenLogprob, ToolCallDelta } from "./generation.ts";
import type { Job } from "./requests.ts";
import { tokenLabel } from "../text/token_bytes.ts";

/** One choice's part of a response or chunk, before it is shaped as chat or completion. */
export interface Choice {
  /** The choice's index (`n` > 1). */
  index: number;
  /** Its text (new text, in a chunk). */
  text: string;
  /** Its tokens' logprobs, when asked for. */
  logprobs: TokenLogprob[];
  /** OpenAI's finish reason, or `null` until the last chunk. */
  finish: string | null;
  /** A chunk's call deltas; a whole response's calls, merged (see `addToolCalls`). */
  toolCalls?: ToolCallDelta[];
  /** Its reasoning text (new reasoning, in a chunk), when the reply has some. */
  reasoning?: string;
  /** Tokens of its reasoning (in a chunk: of this part). */
  reasoningTokens?: number;
}

/** Choice `index`'s part for a piece of its stream, with the finish reason to report. */
export function choiceOf(index: number, p: Piece, finish: string | null): Choice {
  const c: Choice = { index, text: p.text, logprobs: p.logprobs, finish };
  if (p.toolCalls) c.toolCalls = p.toolCalls;
  if (p.reasoning) c.reasoning = p.reasoning;
  if (p.reasoningTokens) c.reasoningTokens = p.reasoningTokens;
  return c;
}

/** Add a streamed part to the whole choice it belongs to (text, calls, reasoning, logprobs). */
export function addPart(whole: Choice, part: Choice): void {
  whole.text += part.text;
  if (part.toolCalls) (whole.toolCalls ??= []).push(...part.toolCalls);
  if (part.reasoning) whole.reasoning = (whole.reasoning ?? "") + part.reasoning;
  if (part.reasoningTokens) {
    whole.reasoningTokens = (whole.reasoningTokens ?? 0) + part.reasoningTokens;
  }
  whole.logprobs.push(...part.logprobs);
  if (part.finish) whole.finish = part.finish;
}

/** A whole call, as a response's `message.tool_calls` entry. */
export interface ToolCall {
  /** The call's id. */
  id: string;
  /** Always `function`. */
  type: "function";
  /** The function's name and its arguments' JSON text. */
  function: { name: string; arguments: string };
}

/** Merge streamed call deltas into whole calls (`calls[index]`), appending argument text. */
export function addToolCalls(calls: ToolCall[], deltas: readonly ToolCallDelta[]): void {
  for (const d of deltas) {
    const call = calls[d.index] ??= {
      id: d.id ?? "",
      type: "function",
      function: { name: d.function.name ?? "", arguments: "" },
    };
    call.function.arguments += d.function.arguments;
  }
}

/** Reasoning text as Dynamo names it (`reasoning_content`) and as vLLM does (`reasoning`). */
const reasoningFields = (c: Choice) =>
  c.reasoning ? { reasoning_content: c.reasoning, reasoning: c.reasoning } : {};

/**
 * A chat reply: content `null` when the reply is only calls or only reasoning (as OpenAI's and
 * vLLM's), the reasoning beside it.
 */
function message(c: Choice) {
  const calls: ToolCall[] = [];
  addToolCalls(calls, c.toolCalls ?? []);
  const content = c.text === "" && (calls.length > 0 || c.reasoning) ? null : c.text;
  return {
    role: "assistant",
    content,
    ...reasoningFields(c),
    ...(calls.length === 0 ? {} : { tool_calls: calls }),
  };
}

/**
 * Where the text of the tokens after `lp` starts: `text_offset` counts the tokens' own text,
 * which is not the text sent when a stop string holds some back.
 */
export const textAfter = (offset: number, lp: readonly TokenLogprob[]): number =>
  lp.reduce((at, t) => at + t.token.length, offset);

function completionLogprobs(lp: TokenLogprob[], offset: number) {
  const text_offset: number[] = [];
  let at = offset;
  for (const t of lp) {
    text_offset.push(at);
    at += t.token.length;
  }
  return {
    tokens: lp.map((t) => tokenLabel(t.token, t.bytes)),
    token_logprobs: lp.map((t) => t.logprob),
    top_logprobs: lp.map((t) =>
      Object.fromEntries(t.top.map((x) => [tokenLabel(x.token, x.bytes), x.logprob]))
    ),
    text_offset,
  };
}

function chatLogprobs(lp: TokenLogprob[]) {
  return {
    content: lp.map((t) => ({
      token: t.token,
      logprob: t.logprob,
      bytes: [...t.bytes],
      top_logprobs: t.top.map((x) => ({
        token: x.token,
        logprob: x.logprob,
        bytes: [...x.bytes],
      })),
    })),
  };
}

/** Token counts of a request, as OpenAI reports them. */
export interface Usage {
  /** Tokens of the prompt (after the chat template, for chat). */
  prompt_tokens: number;
  /** Tokens generated. */
  completion_tokens: number;
  /** `prompt_tokens + completion_tokens`. */
  total_tokens: number;
  /** Chat whose template teaches a reasoning convention: the tokens that were reasoning. */
  completion_tokens_details?: { reasoning_tokens: number };
}

/**
 * The usage of a request with `prompt` prompt and `completion` generated tokens, `reasoning` of
 * them reasoning (given for a reply read for reasoning, see `Job.reasoning`).
 */
export const usage = (prompt: number, completion: number, reasoning?: number): Usage => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
  ...(reasoning === undefined
    ? {}
    : { completion_tokens_details: { reasoning_tokens: reasoning } }),
});

/**
 * A job's usage: `completion` tokens generated, `reasoning` of them reasoning (reported when the
 * job's reply is read for reasoning).
 */
export const jobUsage = (job: Job, completion: number, reasoning: number): Usage =>
  usage(job.promptTokens, completion, job.reasoning === undefined ? undefined : reasoning);

/** `service_tier`, in a response to a request that set one (OpenAI's rule). */
const tier = (job: Job) => job.serviceTier === undefined ? {} : { service_tier: job.serviceTier };

/** A whole response (non-streaming). */
export function responseBody(
  job: Job,
  id: string,
  created: number,
  choices: Choice[],
  u: Usage,
): Record<string, unknown> {
  const common = { id, created, model: job.model, ...tier(job), usage: u };
  if (job.chat) {
    return {
      ...common,
      object: "chat.completion",
      choices: choices.map((c) => ({
        index: c.index,
        message: message(c),
        logprobs: job.logprobs === undefined ? null : chatLogprobs(c.logprobs),
        finish_reason: c.finish,
      })),
    };
  }
  return {
    ...common,
    object: "text_completion",
    choices: choices.map((c) => ({
      index: c.index,
      text: c.text,
      logprobs: job.logprobs === undefined ? null : completionLogprobs(c.logprobs, 0),
      finish_reason: c.finish,
    })),
  };
}

/**
 * Whether a streamed part of a choice is worth a chunk: it has text, reasoning, call deltas,
 * logprobs or the finish, or it is chat's first chunk (which carries the role, as OpenAI's stream
 * opens). A part whose text is held back (a stop string or a multi-byte character pending, a call
 * or a reasoning marker being read) sends nothing; its tokens still count in usage.
 */
export const worthSending = (c: Choice, first: boolean, chat: boolean): boolean =>
  (first && chat) || c.text !== "" || c.reasoning !== undefined || c.toolCalls !== undefined ||
  c.finish !== null || c.logprobs.length > 0;

/** One streamed chunk for one choice; `first` adds the chat role; `offset` is text so far. */
export function chunkBody(
  job: Job,
  id: string,
  created: number,
  c: Choice,
  first: boolean,
  offset: number,
): Record<string, unknown> {
  const common = { id, created, model: job.model, ...tier(job) };
  if (job.chat) {
    return {
      ...common,
      object: "chat.completion.chunk",
      choices: [{
        index: c.index,
        delta: {
          ...(first ? { role: "assistant" } : {}),
          ...(c.text ? { content: c.text } : {}),
          ...reasoningFields(c),
          ...(c.toolCalls ? { tool_calls: c.toolCalls } : {}),
        },
        logprobs: job.logprobs === undefined ? null : chatLogprobs(c.logprobs),
        finish_reason: c.finish,
      }],
    };
  }
  return {
    ...common,
    object: "text_completion",
    choices: [{
      index: c.index,
      text: c.text,
      logprobs: job.logprobs === undefined ? null : completionLogprobs(c.logprobs, offset),
      finish_reason: c.finish,
    }],
  };
}

/** The usage-only chunk of `stream_options.include_usage`. */
export function usageChunk(
  job: Job,
  id: string,
  created: number,
  u: Usage,
): Record<string, unknown> {
  return {
    id,
    created,
    model: job.model,
    ...tier(job),
    object: job.chat ? "chat.completion.chunk" : "text_completion",
    choices: [],
    usage: u,
  };
}
