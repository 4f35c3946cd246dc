/** The text side of a model, from the same sources as its weights (URL, path or `File`s). */
import { describe } from "../contract/describe.ts";
import { EngineError } from "../contract/errors.ts";
import { openGgufFiles } from "../model/gguf/load.ts";
import { ggufText } from "./gguf/tokenizer.ts";
import { type ModelFiles, readText, requireText } from "../formats/source.ts";
import { type ChatMessage, type ChatRenderOptions, ChatTemplate } from "./chat.ts";
import { parseTokenizer } from "./tokenizer.ts";
import { isTokenId } from "../contract/fields.ts";
import type { ModelText } from "./model_text.ts";

export type { ModelText };

/** `eos_token_id`: absent, one token id or a list of them (the tokenizer checks the range). */
function ids(v: unknown, name: string): number[] {
  if (v === undefined || v === null) return [];
  const list: unknown[] = Array.isArray(v) ? v : [v];
  if (!list.every(isTokenId)) {
    throw EngineError.invalidArgument(
      `${name}: eos_token_id: expected token ids, got ${describe(v)}`,
    );
  }
  return list as number[];
}

/**
 * An optional JSON object file, undefined when absent (or an HTML page came in its place: an SPA
 * fallback, see `readText`); anything but an object is `InvalidArgument`.
 */
async function readJson(
  files: ModelFiles,
  name: string,
): Promise<Record<string, unknown> | undefined> {
  const text = await readText(files, name);
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw EngineError.invalidArgument(`${files.location}: ${name} is not JSON`, e);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw EngineError.invalidArgument(
      `${files.location}: ${name}: expected a JSON object, got ${describe(value)}`,
    );
  }
  return value as Record<string, unknown>;
}

/**
 * `tokenizer.json` (required), `tokenizer_config.json` (special tokens, chat template) and the
 * EOS ids of `generation_config.json` / `config.json`; for a GGUF model, the tokenizer and chat
 * template its metadata holds.
 */
export async function loadText(files: ModelFiles): Promise<ModelText> {
  if (files.gguf !== undefined) {
    const gguf = await openGgufFiles(files);
    return ggufText(gguf.metadata, gguf.config.eosTokenIds);
  }
  const json = await requireText(files, "tokenizer.json");
  const config = await readJson(files, "tokenizer_config.json");
  const generation = await readJson(files, "generation_config.json") ?? {};
  const model = await readJson(files, "config.json") ?? {};
  const eos = [
    ...ids(generation.eos_token_id, "generation_config.json"),
    ...ids(model.eos_token_id, "config.json"),
  ];
  const tokenizer = parseTokenizer(
    json,
    config === undefined ? undefined : JSON.stringify(config),
    eos,
  );
  return { tokenizer, chat: ChatTemplate.fromConfig(config) };
}

/** How `encodeChat` renders a conversation, and whether the tokenizer adds its special tokens. */
export interface EncodeChatOptions extends ChatRenderOptions {
  /** Add the tokenizer's special tokens to the rendered text (default: see `encodeChat`). */
  addSpecial?: boolean;
}

/** A conversation as prompt ids: rendered by the model's template (with `options`, see
 * {@linkcode ChatRenderOptions}), which writes its own special tokens (BOS included), so the
 * tokenizer adds none, as `apply_chat_template` tokenizes; only the plain default leaves them to
 * the tokenizer (unless `options.addSpecial` says otherwise). */
export function encodeChat(
  text: ModelText,
  messages: readonly ChatMessage[],
  options: EncodeChatOptions = {},
): number[] {
  const rendered = text.chat.render(messages, text.tokenizer.specialTokens, options);
  return text.tokenizer.encode(rendered, { addSpecial: options.addSpecial ?? text.chat.isDefault });
}
