/**
 * The `prompt` of a `/v1/completions` body in every form OpenAI takes: a string, an array of
 * strings, an array of token ids, or an array of token-id arrays. Each form is a list of prompts,
 * each prompt's token ids checked against the vocabulary; a bad one is `InvalidArgument` naming
 * `prompt` (the message points at the entry: `prompt[1][3]`).
 */
import { describe } from "../contract/describe.ts";
import type { TextTokenizer } from "../text/tokenizer.ts";
import { badRequest } from "./errors.ts";

/** One prompt of a completions body. */
export interface CompletionPrompt {
  /** Its token ids. */
  ids: number[];
  /** The text given, when the prompt was text (token prompts have none). */
  text?: string;
}

const FORMS = "a string, an array of strings, an array of token ids or an array of token-id arrays";

const isId = (t: unknown, vocab: number): t is number =>
  typeof t === "number" && Number.isInteger(t) && t >= 0 && t < vocab;

/**
 * `ids` checked as token ids of a vocabulary of `vocab`: `InvalidArgument` about field `param`,
 * the message naming the entry at fault (`at[j]`, `at` where the list is in the body).
 */
export function checkTokenIds(
  ids: readonly unknown[],
  vocab: number,
  param: string,
  at = param,
): number[] {
  const bad = ids.findIndex((t) => !isId(t, vocab));
  if (bad >= 0) {
    throw badRequest(
      `${at}[${bad}]: expected a token id from 0 to ${vocab - 1}, got ${describe(ids[bad])}`,
      param,
    );
  }
  return ids as number[];
}

/** A prompt's token ids (`at`: where the list is): not empty, each in the vocabulary. */
function tokenIds(ids: readonly unknown[], vocab: number, at: string): number[] {
  if (ids.length === 0) throw badRequest(`${at}: an empty token array`, "prompt");
  return checkTokenIds(ids, vocab, "prompt", at);
}

/**
 * The prompts of `v` (a body's `prompt`), at most `maxPrompts` of them (checked before any is
 * encoded). Text is encoded as completions encode it (the tokenizer's specials added); token ids
 * must lie in `[0, tokenizer.vocabSize)`.
 */
export function completionPrompts(
  v: unknown,
  tokenizer: TextTokenizer,
  maxPrompts: number,
): CompletionPrompt[] {
  if (typeof v === "string") return [{ ids: tokenizer.encode(v), text: v }];
  if (!Array.isArray(v) || v.length === 0) {
    throw badRequest(`prompt: expected ${FORMS}, got ${describe(v)}`, "prompt");
  }
  const vocab = tokenizer.vocabSize;
  if (typeof v[0] === "number") return [{ ids: tokenIds(v, vocab, "prompt") }];
  if (v.length > maxPrompts) {
    throw badRequest(`prompt: ${v.length} prompts; at most ${maxPrompts} are taken`, "prompt");
  }
  const strings = typeof v[0] === "string";
  if (!strings && !Array.isArray(v[0])) {
    const what = "a string, a token id or an array of token ids";
    throw badRequest(`prompt[0]: expected ${what}, got ${describe(v[0])}`, "prompt");
  }
  return v.map((p, i) => {
    if (strings && typeof p === "string") return { ids: tokenizer.encode(p), text: p };
    if (!strings && Array.isArray(p)) return { ids: tokenIds(p, vocab, `prompt[${i}]`) };
    const like = strings ? "a string" : "an array of token ids";
    throw badRequest(`prompt[${i}]: expected ${like} (as prompt[0]), got ${describe(p)}`, "prompt");
  });
}
