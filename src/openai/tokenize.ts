/**
 * vLLM's `/tokenize` and `/detokenize` bodies: a text prompt or chat messages to the model's token
 * ids, and token ids back to text, with the tokenizer and chat template the completions use (so a
 * count is the prompt a completion would run). A body with a field Kiln does not honour, or a bad
 * value, is `InvalidArgument` naming the field.
 */
import { describe } from "../contract/describe.ts";
import type { ModelText } from "../text/load.ts";
import { tokenLabel } from "../text/token_bytes.ts";
import { badRequest } from "./errors.ts";
import { checkTokenIds } from "./prompts.ts";
import { chatPrompt } from "./requests.ts";
import { structuredOutput } from "./structured.ts";

/** What `/tokenize` answers (vLLM's `TokenizeResponse`). */
export interface TokenizeResponse {
  /** How many tokens. */
  count: number;
  /** The model's context length (null when the engine reports none). */
  max_model_len: number | null;
  /** The token ids. */
  tokens: number[];
  /** With `return_token_strs`: each token's text alone (as completions' logprobs label it). */
  token_strs: string[] | null;
}

/** What `/detokenize` answers (vLLM's `DetokenizeResponse`). */
export interface DetokenizeResponse {
  /** The tokens' text, special tokens kept. */
  prompt: string;
}

type Body = Record<string, unknown>;

const TEXT_FIELDS = new Set(["model", "prompt", "add_special_tokens", "return_token_strs"]);
const CHAT_FIELDS = new Set([
  "model",
  "messages",
  "add_generation_prompt",
  "continue_final_message",
  "add_special_tokens",
  "return_token_strs",
  "chat_template_kwargs",
  "tools",
]);

function object(body: unknown): Body {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw badRequest("the body must be a JSON object");
  }
  return body as Body;
}

function onlyFields(b: Body, known: Set<string>, route: string): void {
  for (const key of Object.keys(b)) {
    if (key === "chat_template") {
      throw badRequest("chat_template: a request's own template is not run (the model's is)", key);
    }
    if (!known.has(key)) throw badRequest(`${key}: unsupported field for ${route}`, key);
  }
}

const bool = (b: Body, k: string): boolean | undefined => {
  const v = b[k];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw badRequest(`${k}: expected a boolean`, k);
  return v;
};

/** A chat body's ids: the prompt a chat completion of it runs, but for `add_special_tokens`. */
function chatTokens(b: Body, text: ModelText): number[] {
  if (bool(b, "continue_final_message")) {
    throw badRequest("continue_final_message: not supported", "continue_final_message");
  }
  const none = b.tools === undefined || b.tools === null ||
    (Array.isArray(b.tools) && b.tools.length === 0);
  // Checked as a chat completion checks them, and offered to the template as it would be.
  const tools = none
    ? undefined
    : structuredOutput({ tools: b.tools, tool_choice: "required" }, true, text.chat).tools;
  return chatPrompt(b, text, tools, {
    addGenerationPrompt: bool(b, "add_generation_prompt") ?? true,
    // vLLM's field; unset, the specials are as a chat completion encodes them (`encodeChat`).
    addSpecial: bool(b, "add_special_tokens") ?? text.chat.isDefault,
  });
}

/**
 * `POST /tokenize`: `{prompt, add_special_tokens?}` (specials added by default, as completions
 * encode a prompt) or `{messages, add_generation_prompt?, add_special_tokens?, tools?,
 * chat_template_kwargs?}` (the chat template's prompt, as chat completions render it), either
 * with `return_token_strs`. `contextLength` is reported as `max_model_len`.
 */
export function tokenize(
  body: unknown,
  text: ModelText,
  contextLength: number | undefined,
): TokenizeResponse {
  const b = object(body);
  const chat = b.messages !== undefined;
  onlyFields(b, chat ? CHAT_FIELDS : TEXT_FIELDS, chat ? "/tokenize with messages" : "/tokenize");
  let tokens: number[];
  if (chat) tokens = chatTokens(b, text);
  else if (typeof b.prompt === "string") {
    tokens = text.tokenizer.encode(b.prompt, { addSpecial: bool(b, "add_special_tokens") ?? true });
  } else {
    throw badRequest(
      `prompt: expected a string (or messages), got ${describe(b.prompt)}`,
      "prompt",
    );
  }
  const tok = text.tokenizer;
  const strs = bool(b, "return_token_strs")
    ? tokens.map((id) => tokenLabel(tok.decode([id], { skipSpecial: false }), tok.tokenBytes(id)))
    : null;
  return { count: tokens.length, max_model_len: contextLength ?? null, tokens, token_strs: strs };
}

/** `POST /detokenize`: `{tokens}`, each a token id of the model, to their text. */
export function detokenize(body: unknown, text: ModelText): DetokenizeResponse {
  const b = object(body);
  onlyFields(b, new Set(["model", "tokens"]), "/detokenize");
  if (!Array.isArray(b.tokens)) {
    throw badRequest(`tokens: expected an array of token ids, got ${describe(b.tokens)}`, "tokens");
  }
  const ids = checkTokenIds(b.tokens, text.tokenizer.vocabSize, "tokens");
  return { prompt: text.tokenizer.decode(ids, { skipSpecial: false }) };
}
