/**
 * Checks of an HF `tokenizer.json` made before `@huggingface/tokenizers` sees it. The library
 * reads its input as trusted: a `merges` that is not a list, a Unigram vocabulary entry that is
 * not a `[piece, score]` pair, a component whose `type` is an object or a list nested thousands
 * deep make it throw `TypeError`s (or overflow the stack), not say what is wrong. Found by
 * fuzzing (`test/fuzz/text_test.ts`); each case is in `test/fuzz/corpus/tokenizer_files.jsonl`.
 */
import { describe } from "../contract/describe.ts";
import { EngineError } from "../contract/errors.ts";
import { isTokenId } from "../contract/fields.ts";

type Json = Record<string, unknown>;

const isJson = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** `InvalidArgument` about `file`. */
export function refuse(file: string, why: string, cause?: unknown): EngineError {
  return EngineError.invalidArgument(`${file}: ${why}`, cause);
}

/** `v` as a token id below `limit`, else `InvalidArgument` naming `what`. */
export function checkId(v: unknown, what: string, limit = 0x1_0000_0000): number {
  if (!isTokenId(v) || v >= limit) {
    throw refuse(what, `expected a token id below ${limit}, got ${describe(v)}`);
  }
  return v;
}

/** An entry of `added_tokens`, checked. */
export interface AddedToken {
  id: number;
  content: string;
  special?: boolean;
}

/** `added_tokens`: absent, or a list of `{id, content, special?}`. */
export function addedTokens(v: unknown): AddedToken[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) {
    throw refuse("tokenizer.json", `added_tokens: expected a list, got ${describe(v)}`);
  }
  return v.map((t, i) => {
    const where = `tokenizer.json: added_tokens[${i}]`;
    if (!isJson(t) || typeof t.content !== "string") {
      throw refuse(where, `expected {id, content}, got ${describe(t)}`);
    }
    if (t.special !== undefined && typeof t.special !== "boolean") {
      throw refuse(where, `special: expected a boolean, got ${describe(t.special)}`);
    }
    return { id: checkId(t.id, `${where}.id`), content: t.content, special: t.special === true };
  });
}

const bad = (path: string, expected: string, v: unknown) =>
  refuse("tokenizer.json", `${path}: expected ${expected}, got ${describe(v)}`);

/** A BPE or WordPiece `model.vocab` (piece to id): the vocabulary's size (above every id). */
function pieceIds(vocab: unknown): number {
  if (!isJson(vocab)) throw bad("model.vocab", "an object of piece: id", vocab);
  let size = 0;
  for (const [piece, id] of Object.entries(vocab)) {
    size = Math.max(size, checkId(id, `tokenizer.json: model.vocab[${describe(piece, 40)}]`) + 1);
  }
  return size;
}

/** BPE `merges`: a list of `"a b"` strings, or of `["a", "b"]` pairs. */
function checkMerges(merges: unknown): void {
  if (!Array.isArray(merges)) throw bad("model.merges", "a list", merges);
  const pairs = Array.isArray(merges[0]);
  merges.forEach((m, i) => {
    const ok = pairs
      ? Array.isArray(m) && m.length === 2 && m.every((s) => typeof s === "string")
      : typeof m === "string";
    if (!ok) {
      throw bad(`model.merges[${i}]`, pairs ? "a pair of strings" : "a string", m);
    }
  });
}

/** A Unigram `model.vocab`: a non-empty list of `[piece, score]`; its length. */
function unigramVocab(vocab: unknown): number {
  if (!Array.isArray(vocab) || vocab.length === 0) {
    throw bad("model.vocab", "a non-empty list of [piece, score]", vocab);
  }
  vocab.forEach((entry, i) => {
    if (
      !Array.isArray(entry) || entry.length !== 2 || typeof entry[0] !== "string" ||
      typeof entry[1] !== "number" || !Number.isFinite(entry[1])
    ) throw bad(`model.vocab[${i}]`, "[piece, score]", entry);
  });
  return vocab.length;
}

const OPTIONAL_STRING = (v: unknown) => v === undefined || v === null || typeof v === "string";

/** The size of `model`'s own vocabulary (added tokens aside), every field the library reads checked. */
export function modelVocabSize(model: Json): number {
  if (model.type === "Unigram") {
    const size = unigramVocab(model.vocab);
    if (model.unk_id !== undefined && model.unk_id !== null) {
      checkId(model.unk_id, "tokenizer.json: model.unk_id", size);
    }
    return size;
  }
  const size = pieceIds(model.vocab);
  if (!OPTIONAL_STRING(model.unk_token)) {
    throw bad("model.unk_token", "a string", model.unk_token);
  }
  if (model.type === "BPE") checkMerges(model.merges);
  return size;
}

/** The four pipeline components and the key of a `Sequence`'s list in each. */
const COMPONENTS: Record<string, string> = {
  normalizer: "normalizers",
  pre_tokenizer: "pretokenizers",
  post_processor: "processors",
  decoder: "decoders",
};
/** Deeper than any real tokenizer nests its components' settings. */
const MAX_DEPTH = 32;

/** Settings nested no deeper than {@linkcode MAX_DEPTH} (the library walks some of them). */
function checkDepth(v: unknown, path: string, depth: number): void {
  if (depth > MAX_DEPTH) {
    throw refuse("tokenizer.json", `${path}: nested more than ${MAX_DEPTH} deep`);
  }
  if (typeof v !== "object" || v === null) return;
  for (const x of Object.values(v)) checkDepth(x, path, depth + 1);
}

/** A component: `{type, ...}` with a string type; a `Sequence`'s list, components too. */
function checkComponent(v: unknown, list: string, path: string): void {
  if (!isJson(v) || typeof v.type !== "string") {
    throw bad(path, "an object with a string type", v);
  }
  if (v.type === "Sequence") {
    const items = v[list];
    if (!Array.isArray(items)) throw bad(`${path}.${list}`, "a list", items);
    items.forEach((x, i) => checkComponent(x, list, `${path}.${list}[${i}]`));
  }
}

/** `normalizer`, `pre_tokenizer`, `post_processor`, `decoder`: each null or `{type, ...}`. */
export function checkComponents(json: Json): void {
  for (const [name, list] of Object.entries(COMPONENTS)) {
    const v = json[name];
    if (v === undefined || v === null) continue; // absent: the library says it is required
    checkDepth(v, name, 0);
    checkComponent(v, list, name);
  }
}

/** `tokenizer_config.json`'s fields the library reads: `additional_special_tokens` a list. */
export function checkTokenizerConfig(config: Json): void {
  const extra = config.additional_special_tokens;
  if (extra !== undefined && extra !== null && !Array.isArray(extra)) {
    throw refuse(
      "tokenizer_config.json",
      `additional_special_tokens: expected a list, got ${describe(extra)}`,
    );
  }
}
