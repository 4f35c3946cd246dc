/**
 * OpenAI `/v1/completions` and `/v1/chat/completions` bodies, checked and turned into what the
 * engine takes (plus the text-side options: stop strings, logprobs, streaming).
 */
import { EngineError } from "../contract/errors.ts";
import type { PreprocessedRequest, SamplingOptions, StopConditions } from "../contract/types.ts";
import { encodeChat, type EncodeChatOptions, type ModelText } from "../text/load.ts";
import { badRequest, quote } from "./errors.ts";
import { chatMessages } from "./messages.ts";
import { type StructuredOutput, structuredOutput } from "./structured.ts";
import { checkFields } from "./request_fields.ts";
import { type CompletionPrompt, completionPrompts } from "./prompts.ts";
import { type ReplyReasoning, replyReasoning, templateVariables } from "./reasoning_request.ts";

/** A checked OpenAI request: what the engine runs per choice, and how the text is shaped. */
export interface Job {
  /** The chat form (`/v1/chat/completions`) rather than completions. */
  chat: boolean;
  /** The request's `model`. */
  model: string;
  /** The prompt's token ids (through the chat template, for chat); the first of `prompts`. */
  prompt: number[];
  /** Each prompt's token ids: one for chat, one or more for completions (`prompt` an array). */
  prompts: number[][];
  /** Prompt tokens in all, each prompt counted once (usage's `prompt_tokens`). */
  promptTokens: number;
  /** Choices to generate per prompt. */
  n: number;
  /**
   * Choices in all, `prompts.length × n`: choice `k` is sample `k % n` of prompt `⌊k / n⌋`, as
   * OpenAI numbers them.
   */
  choices: number;
  /** A choice of the longest prompt (the one a capacity check tries). */
  longest: number;
  /** Stream chunks rather than answer whole. */
  stream: boolean;
  /** `stream_options.include_usage`: a usage chunk ends the stream. */
  includeUsage: boolean;
  /** Stop strings. */
  stop: string[];
  /** `include_stop_str_in_output`. */
  includeStop: boolean;
  /** Leave special tokens out of the text. */
  skipSpecial: boolean;
  /** Top alternatives per token (0 = only the chosen token's logprob); undefined: none. */
  logprobs: number | undefined;
  /** Tokens to generate before a stop string may end the text (`min_tokens`). */
  minTokens: number;
  /** `echo` (completions): each prompt's text, put before the text of its choices. */
  echo?: string[];
  /** `service_tier` when the request set one: Kiln's only tier, echoed in the response. */
  serviceTier?: "default";
  /** `response_format`, `tools`, `tool_choice`: the constraint and how calls are read. */
  structured: StructuredOutput;
  /** Chat whose template teaches a reasoning convention: how the reply's reasoning is read. */
  reasoning?: ReplyReasoning;
  /** The request for choice `k` (its prompt's; seeds differ between a prompt's choices). */
  request(k: number): PreprocessedRequest;
}

/** What a request may ask for. */
export interface Limits {
  /** Largest `n`, and of `n` times the number of prompts. */
  maxN: number;
  /** The context length: the prompt and `max_tokens` must fit in it. */
  contextLength: number;
  /** Largest `logprobs` / `top_logprobs`. */
  maxLogprobs: number;
}

type Body = Record<string, unknown>;

const num = (b: Body, k: string, lo: number, hi: number, int = false): number | undefined => {
  const v = b[k];
  if (v === undefined || v === null) return undefined;
  if (
    typeof v !== "number" || !Number.isFinite(v) || v < lo || v > hi ||
    (int && !Number.isInteger(v))
  ) {
    throw badRequest(
      `${k}: expected ${int ? "an integer" : "a number"} in [${lo}, ${hi}], got ${quote(v)}`,
      k,
    );
  }
  return v;
};

/**
 * `top_p` in (0, 1], as the engine takes it (vLLM's range): 0 would keep no token at all, so it
 * is refused here, naming the field, rather than by the engine under its own name.
 */
const topP = (b: Body): number | undefined => {
  const v = num(b, "top_p", 0, 1);
  if (v === 0) throw badRequest(`top_p: expected a number in (0, 1], got 0`, "top_p");
  return v;
};

const bool = (b: Body, k: string): boolean | undefined => {
  const v = b[k];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw badRequest(`${k}: expected a boolean`, k);
  return v;
};

function stops(b: Body): string[] {
  const v = b.stop;
  if (v === undefined || v === null) return [];
  const list = typeof v === "string" ? [v] : v;
  if (!Array.isArray(list) || list.length > 4 || !list.every((s) => typeof s === "string")) {
    throw badRequest("stop: expected a string or up to 4 strings", "stop");
  }
  return list as string[];
}

/**
 * A chat body's prompt ids, as chat completions run them (and `/tokenize` counts them): its
 * `messages` through the model's template with `tools` and the body's template variables (see
 * `templateVariables`), encoded by `encodeChat` with `options`. Throws `EngineError`
 * (`InvalidArgument`, `param` the field) for bad messages or variables, and for messages the
 * template's render budget cannot hold (`messages`).
 */
export function chatPrompt(
  b: Body,
  text: ModelText,
  tools: StructuredOutput["tools"],
  options: Pick<EncodeChatOptions, "addGenerationPrompt" | "addSpecial"> = {},
): number[] {
  const messages = chatMessages(b.messages);
  const variables = templateVariables(b, text.chat);
  try {
    return encodeChat(text, messages, {
      ...options,
      ...(tools ? { tools } : {}),
      ...(variables ? { variables } : {}),
    });
  } catch (e) {
    // The template's render budget: the same messages always exceed it, so retrying cannot
    // help (400, not the 429 a ResourceExhausted engine error gets).
    if (e instanceof EngineError && e.type === "ResourceExhausted") {
      throw badRequest(e.message, "messages");
    }
    throw e;
  }
}

/**
 * Choice `i`'s seed: the request's own for choice 0, then distinct safe integers for the others
 * (counting down where counting up would leave the safe range), so no two choices of a request
 * share a stream whatever the seed.
 */
export function choiceSeed(seed: number, i: number): number {
  return seed <= Number.MAX_SAFE_INTEGER - i ? seed + i : seed - i;
}

function tokenIdList(b: Body, k: string): number[] | undefined {
  const v = b[k];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((t) => Number.isInteger(t) && t >= 0 && t <= 0xffff_ffff)) {
    throw badRequest(`${k}: expected an array of token ids`, k);
  }
  return v as number[];
}

/** Token ids as text, special tokens kept (what `echo` shows of a token prompt). */
const decodeAll = (text: ModelText, ids: number[]) =>
  text.tokenizer.decode(ids, { skipSpecial: false });

/**
 * `n`, checked: `n` times the number of prompts is at most `maxN`; and `best_of`, of which only
 * `n` itself is honoured.
 */
function choicesPerPrompt(b: Body, prompts: number, maxN: number): number {
  const n = num(b, "n", 1, Infinity, true) ?? 1;
  if (n > maxN) throw badRequest(`n: at most ${maxN}`, "n");
  if (n * prompts > maxN) {
    throw badRequest(`n: ${n} choices for each of ${prompts} prompts is over ${maxN} in all`, "n");
  }
  const bestOf = num(b, "best_of", 1, Infinity, true);
  if (bestOf !== undefined && bestOf !== n) {
    // Ranking candidates by their summed logprobs is not implemented: only best_of = n, which
    // returns every candidate, is honoured.
    throw badRequest(`best_of: only best_of = n (${n}) is supported`, "best_of");
  }
  return n;
}

/**
 * Check a body and build the job; `chat` picks the chat form. Throws `EngineError`
 * (`InvalidArgument`, its `param` the field at fault, its message clipped) for a bad body.
 */
export function parseJob(body: unknown, chat: boolean, text: ModelText, limits: Limits): Job {
  try {
    return buildJob(body, chat, text, limits);
  } catch (e) {
    if (e instanceof EngineError && e.param !== undefined) throw badRequest(e.message, e.param);
    throw e;
  }
}

/** A body that is a JSON object of known fields, with its `model` set. */
type ModelBody = Body & { model: string };

/** The checks every body passes first: a JSON object, of known fields, naming a `model`. */
function checkedBody(body: unknown, chat: boolean): ModelBody {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw badRequest("the body must be a JSON object");
  }
  const b = body as Body;
  checkFields(b, chat);
  if (typeof b.model !== "string") throw badRequest("model: required", "model");
  return b as ModelBody;
}

/** The prompts: the chat's messages through its template (one), or completions' `prompt`. */
function jobPrompts(
  b: Body,
  chat: boolean,
  text: ModelText,
  structured: StructuredOutput,
  maxN: number,
): CompletionPrompt[] {
  return chat
    ? [{ ids: chatPrompt(b, text, structured.tools) }]
    : completionPrompts(b.prompt, text.tokenizer, maxN);
}

/** The longest prompt's index, and the tokens to generate, checked to fit beside it. */
function tokenBudget(
  b: Body,
  chat: boolean,
  prompts: CompletionPrompt[],
  contextLength: number,
): { longest: number; maxTokens: number } {
  const longest = prompts.reduce((at, p, i) => p.ids.length > prompts[at]!.ids.length ? i : at, 0);
  const ids = prompts[longest]!.ids;
  const which = prompts.length === 1 ? "the prompt" : `prompt[${longest}]`;
  const room = contextLength - ids.length;
  if (room <= 0) {
    throw badRequest(
      `${which} is ${ids.length} tokens; the context is ${contextLength}`,
      chat ? "messages" : "prompt",
    );
  }
  const maxTokens = num(b, chat ? "max_completion_tokens" : "max_tokens", 0, Infinity, true) ??
    num(b, "max_tokens", 0, Infinity, true) ?? (chat ? room : 16);
  if (maxTokens > room) {
    throw badRequest(
      `max_tokens: ${maxTokens} does not fit: ${which} is ${ids.length} tokens of a ${contextLength} context`,
      "max_tokens",
    );
  }
  return { longest, maxTokens };
}

/**
 * Top alternatives per token: chat's `top_logprobs` (0 unless set) when its `logprobs` is true,
 * completions' `logprobs`; undefined: none asked for.
 */
function requestedLogprobs(b: Body, chat: boolean, maxLogprobs: number): number | undefined {
  if (chat) {
    return bool(b, "logprobs") ? num(b, "top_logprobs", 0, maxLogprobs, true) ?? 0 : undefined;
  }
  return num(b, "logprobs", 0, maxLogprobs, true);
}

/** The sampling options the body sets, each checked (`seed` aside: each choice has its own). */
function samplingOptions(b: Body): SamplingOptions {
  const sampling: SamplingOptions = {};
  const set = <K extends keyof SamplingOptions>(k: K, v: SamplingOptions[K] | undefined) => {
    if (v !== undefined) sampling[k] = v;
  };
  set("temperature", num(b, "temperature", 0, 2));
  set("top_p", topP(b));
  set("top_k", num(b, "top_k", -1, Infinity, true));
  set("min_p", num(b, "min_p", 0, 1));
  set("presence_penalty", num(b, "presence_penalty", -2, 2));
  set("frequency_penalty", num(b, "frequency_penalty", -2, 2));
  set("repetition_penalty", num(b, "repetition_penalty", 0.01, 10));
  return sampling;
}

/** The token-side stop conditions, checked, and the two the job keeps for the text side. */
interface Stopping {
  /** Every choice's `stop_conditions` (copied into each request). */
  conditions: StopConditions;
  /** `min_tokens`, 0 unless set. */
  minTokens: number;
  /** `include_stop_str_in_output`. */
  includeStop: boolean;
}

/** `max_tokens` with the body's `min_tokens`, `ignore_eos` and `stop_token_ids`. */
function stopping(b: Body, maxTokens: number): Stopping {
  const minTokens = num(b, "min_tokens", 0, maxTokens, true);
  const ignoreEos = bool(b, "ignore_eos");
  const stopTokenIds = tokenIdList(b, "stop_token_ids");
  const includeStop = bool(b, "include_stop_str_in_output") ?? false;
  const conditions: StopConditions = {
    max_tokens: maxTokens,
    ...(minTokens === undefined ? {} : { min_tokens: minTokens }),
    ...(ignoreEos === undefined ? {} : { ignore_eos: ignoreEos }),
    ...(stopTokenIds === undefined
      ? {}
      : { [includeStop ? "stop_token_ids" : "stop_token_ids_hidden"]: stopTokenIds }),
  };
  return { conditions, minTokens: minTokens ?? 0, includeStop };
}

/**
 * How the reply's reasoning is read: chat only, and only unconstrained, since a constrained reply
 * (`response_format`, a required or named call) has no room to reason.
 */
function jobReasoning(
  chat: boolean,
  structured: StructuredOutput,
  text: ModelText,
  prompt: number[],
): ReplyReasoning | undefined {
  return chat && structured.guided === undefined ? replyReasoning(text, prompt) : undefined;
}

/** What every choice's request is built from. */
interface ChoiceParts {
  b: ModelBody;
  text: ModelText;
  prompts: CompletionPrompt[];
  n: number;
  stop: Stopping;
  sampling: SamplingOptions;
  seed: number | undefined;
  structured: StructuredOutput;
  logprobs: number | undefined;
}

/** The request for choice `k`: its prompt's tokens, its own seed, the shared options. */
function choiceRequest(parts: ChoiceParts, k: number): PreprocessedRequest {
  const { b, n, seed, structured, logprobs } = parts;
  return {
    model: b.model,
    token_ids: parts.prompts[Math.floor(k / n)]!.ids,
    stop_conditions: { ...parts.stop.conditions },
    sampling_options: {
      ...parts.sampling,
      ...(seed === undefined ? {} : { seed: choiceSeed(seed, k % n) }),
      ...(structured.guided ? { guided_decoding: { ...structured.guided } } : {}),
    },
    output_options: logprobs === undefined ? {} : { logprobs },
    eos_token_ids: [...parts.text.tokenizer.eosTokenIds],
    annotations: [],
  };
}

function buildJob(body: unknown, chat: boolean, text: ModelText, limits: Limits): Job {
  const b = checkedBody(body, chat);
  const structured = structuredOutput(b, chat, text.chat);
  const prompts = jobPrompts(b, chat, text, structured, limits.maxN);
  const n = choicesPerPrompt(b, prompts.length, limits.maxN);
  const { longest, maxTokens } = tokenBudget(b, chat, prompts, limits.contextLength);
  const logprobs = requestedLogprobs(b, chat, limits.maxLogprobs);
  const sampling = samplingOptions(b);
  const seed = num(b, "seed", Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, true);
  const stop = stopping(b, maxTokens);
  const echo = !chat && bool(b, "echo") === true;
  const reasoning = jobReasoning(chat, structured, text, prompts[0]!.ids);
  if (echo && logprobs !== undefined) {
    // OpenAI then also scores the prompt's tokens, which needs prompt logprobs.
    throw badRequest("echo with logprobs is not supported", "echo");
  }
  const parts: ChoiceParts = { b, text, prompts, n, stop, sampling, seed, structured, logprobs };
  return {
    chat,
    model: b.model,
    prompt: prompts[0]!.ids,
    prompts: prompts.map((p) => p.ids),
    promptTokens: prompts.reduce((sum, p) => sum + p.ids.length, 0),
    n,
    choices: prompts.length * n,
    longest: longest * n,
    stream: bool(b, "stream") ?? false,
    includeUsage: (b.stream_options as Body | undefined)?.include_usage === true,
    stop: stops(b),
    includeStop: stop.includeStop,
    // Calls and reasoning are read from the text, and their markers are special tokens in some
    // vocabularies (gpt-oss's channels in all).
    skipSpecial: bool(b, "skip_special_tokens") ?? (structured.calls === undefined && !reasoning),
    logprobs,
    minTokens: stop.minTokens,
    ...(echo ? { echo: prompts.map((p) => p.text ?? decodeAll(text, p.ids)) } : {}),
    // Checked by `checkFields`; whatever tier was asked for, Kiln's one tier served it.
    ...(b.service_tier === undefined || b.service_tier === null ? {} : { serviceTier: "default" }),
    structured,
    ...(reasoning ? { reasoning } : {}),
    request: (k) => choiceRequest(parts, k),
  };
}
