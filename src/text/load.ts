/** The text side of a model, from the same sources as its weights (URL, path or `File`s). */
import { EngineError } from "../contract/errors.ts";
import { openGgufFiles } from "../model/gguf/load.ts";
import { ggufText } from "../model/gguf/tokenizer.ts";
import { missingFile, type ModelFiles, readText } from "../model/source.ts";
import { type ChatMessage, ChatTemplate } from "./chat.ts";
import { parseTokenizer, type TextTokenizer } from "./tokenizer.ts";

export interface ModelText {
  tokenizer: TextTokenizer;
  chat: ChatTemplate;
}

const ids = (v: unknown): number[] =>
  typeof v === "number" ? [v] : Array.isArray(v) ? v.filter((x) => typeof x === "number") : [];

async function readJson(files: ModelFiles, name: string): Promise<Record<string, unknown>> {
  const text = await readText(files, name);
  if (text === undefined) return {};
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (e) {
    throw EngineError.invalidArgument(`${files.location}: ${name} is not JSON`, e);
  }
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
  const json = await readText(files, "tokenizer.json");
  if (json === undefined) {
    throw missingFile(files, "tokenizer.json");
  }
  const config = await readText(files, "tokenizer_config.json");
  const generation = await readJson(files, "generation_config.json");
  const model = await readJson(files, "config.json");
  const eos = [...ids(generation.eos_token_id), ...ids(model.eos_token_id)];
  const tokenizer = parseTokenizer(json, config, eos);
  let parsedConfig: Record<string, unknown> | undefined;
  if (config !== undefined) parsedConfig = JSON.parse(config) as Record<string, unknown>;
  return { tokenizer, chat: ChatTemplate.fromConfig(parsedConfig) };
}

/** A conversation as prompt ids: rendered by the model's template, which writes its own special
 * tokens (BOS included); only the plain default leaves them to the tokenizer. */
export function encodeChat(text: ModelText, messages: readonly ChatMessage[]): number[] {
  const rendered = text.chat.render(messages, text.tokenizer.specialTokens);
  return text.tokenizer.encode(rendered, { addSpecial: text.chat.isDefault });
}
