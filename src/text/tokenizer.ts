/**
 * Tokenizers behind one interface: the byte-level tokenizer of the fortune model, and HF
 * `tokenizer.json` files (BPE, Unigram/SentencePiece, WordPiece) through `@huggingface/tokenizers`,
 * the tokenizer library transformers.js is built on, rather than a hand-written BPE.
 */
import { Tokenizer as HfTokenizer } from "@huggingface/tokenizers";
import { describe } from "../contract/describe.ts";
import { EngineError } from "../contract/errors.ts";
import { isTokenId } from "../contract/fields.ts";
import { isByteLevelDecoder, pieceBytes } from "./token_bytes.ts";
import {
  addedTokens,
  checkComponents,
  checkId,
  checkTokenizerConfig,
  modelVocabSize,
  refuse,
} from "./tokenizer_check.ts";

/** Options of `TextTokenizer.encode`. */
export interface EncodeOptions {
  /** Add what the tokenizer adds around a text (BOS for Llama; default true). */
  addSpecial?: boolean;
  /**
   * A special token's text in the text is that token (default true); false encodes it as plain
   * text, so text from outside cannot smuggle in control tokens (llama.cpp's `parse_special`).
   * Non-special added tokens are matched either way.
   */
  parseSpecial?: boolean;
}

/** What the engine needs from a tokenizer. */
export interface TextTokenizer {
  /** Ids are in `[0, vocabSize)`. */
  readonly vocabSize: number;
  /** Ids the model ends a sequence with. */
  readonly eosTokenIds: readonly number[];
  /** The id encode() puts first when `addSpecial`, if the tokenizer has one. */
  readonly bosTokenId: number | undefined;
  /** Special tokens' strings by name (`bos_token`, `eos_token`, ...) for chat templates. */
  readonly specialTokens: Readonly<Record<string, string>>;
  /** Ids of `text` (see `EncodeOptions`). */
  encode(text: string, options?: EncodeOptions): number[];
  /** Text of `ids`; may end in U+FFFD when the ids stop inside a UTF-8 character. */
  decode(ids: readonly number[], options?: { skipSpecial?: boolean }): string;
  /** Whether `id` is a special (control) token. */
  isSpecial(id: number): boolean;
  /** The bytes of token `id` alone (a byte token may be part of a UTF-8 character). */
  tokenBytes(id: number): Uint8Array;
}

/** Model types `@huggingface/tokenizers` implements. */
export const SUPPORTED_MODEL_TYPES = ["BPE", "Unigram", "WordPiece"] as const;

type Json = Record<string, unknown>;

/** A special token as `tokenizer_config.json` writes it: a string or `{ content }`. */
export function tokenString(v: unknown): string | undefined {
  return typeof v === "string"
    ? v
    : v && typeof v === "object" && typeof (v as Json).content === "string"
    ? (v as Json).content as string
    : undefined;
}

const isJson = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

const LIBRARY = "@huggingface/tokenizers";

/**
 * Run a call into `@huggingface/tokenizers`; what it throws becomes `InvalidArgument` naming the
 * library and the error's class, the error kept as `cause`.
 */
function guarded<T>(what: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw EngineError.fromLibrary(LIBRARY, `tokenizer: ${what} failed`, e);
  }
}

/** `fortune`'s tokenizer: ids 0-255 are UTF-8 bytes, then a few special tokens. */
export class ByteTokenizer implements TextTokenizer {
  /** 256 byte tokens plus the special tokens. */
  readonly vocabSize: number;
  readonly eosTokenIds: readonly number[];
  /** From `bos_token_id`, if present. */
  readonly bosTokenId: number | undefined;
  readonly specialTokens: Readonly<Record<string, string>>;
  readonly #names = new Map<number, string>();
  readonly #ids = new Map<string, number>();
  /** Splits text at the special tokens' names, the names kept (at odd indices). */
  readonly #split: RegExp | undefined;

  /**
   * A tokenizer from the fortune model's `tokenizer.json` (`vocab_size`, `bos_token_id`,
   * `eos_token_id`, `pad_token_id`); a malformed one is `InvalidArgument`.
   */
  constructor(json: Json) {
    const size = json.vocab_size ?? 256;
    if (!isTokenId(size) || size < 256) {
      throw refuse(
        "tokenizer.json",
        `vocab_size: expected an integer >= 256, got ${describe(size)}`,
      );
    }
    this.vocabSize = size;
    const id = (k: string) =>
      json[k] === undefined || json[k] === null
        ? undefined
        : checkId(json[k], `tokenizer.json: ${k}`, size);
    this.bosTokenId = id("bos_token_id");
    const eos = id("eos_token_id");
    this.eosTokenIds = eos === undefined ? [] : [eos];
    const special: Record<string, string> = {};
    for (const name of ["bos", "eos", "pad"]) {
      const v = id(`${name}_token_id`);
      if (v === undefined) continue;
      special[`${name}_token`] = `<${name}>`;
      this.#names.set(v, `<${name}>`);
      this.#ids.set(`<${name}>`, v);
    }
    this.specialTokens = special;
    if (this.#ids.size > 0) this.#split = new RegExp(`(${[...this.#ids.keys()].join("|")})`);
  }

  /**
   * The text's UTF-8 bytes; a special token's name in it (`<bos>`, `<eos>`, `<pad>`: what a chat
   * template writes) is that token unless `parseSpecial` is false.
   */
  encode(text: string, options: EncodeOptions = {}): number[] {
    const ids = options.addSpecial !== false && this.bosTokenId !== undefined
      ? [this.bosTokenId]
      : [];
    const encoder = new TextEncoder();
    const parts = options.parseSpecial === false || this.#split === undefined
      ? [text]
      : text.split(this.#split);
    parts.forEach((part, i) => {
      if (i % 2 === 1) ids.push(this.#ids.get(part)!);
      else for (const b of encoder.encode(part)) ids.push(b);
    });
    return ids;
  }

  decode(ids: readonly number[], options: { skipSpecial?: boolean } = {}): string {
    let out = "";
    let run: number[] = [];
    const flush = () => {
      out += new TextDecoder().decode(Uint8Array.from(run));
      run = [];
    };
    for (const id of ids) {
      if (id < 256) run.push(id);
      else {
        flush();
        if (!options.skipSpecial) out += this.#names.get(id) ?? "";
      }
    }
    flush();
    return out;
  }

  /** Ids from 256 up are special. */
  isSpecial(id: number): boolean {
    return id >= 256;
  }

  /** A byte token's byte; a special token's name. */
  tokenBytes(id: number): Uint8Array {
    return id < 256 ? Uint8Array.of(id) : new TextEncoder().encode(this.#names.get(id) ?? "");
  }
}

/** An HF `tokenizer.json` (+ `tokenizer_config.json`) through `@huggingface/tokenizers`. */
export class HfTextTokenizer implements TextTokenizer {
  /** The size of the vocabulary, added tokens included. */
  readonly vocabSize: number;
  readonly eosTokenIds: readonly number[];
  /** The BOS token's id, if the tokenizer has one. */
  readonly bosTokenId: number | undefined;
  readonly specialTokens: Readonly<Record<string, string>>;
  readonly #tok: HfTokenizer;
  /** The same tokenizer less its special added tokens (`parseSpecial: false`), made on first use. */
  #plain: (() => HfTokenizer) | HfTokenizer;
  readonly #special: Set<number>;
  readonly #byteLevel: boolean;

  /**
   * A tokenizer from a parsed `tokenizer.json` and `tokenizer_config.json`; `eosFromModel` (the
   * model config's EOS ids) joins the tokenizer's own. A malformed or unsupported tokenizer is
   * `InvalidArgument`.
   */
  constructor(json: Json, config: Json = {}, eosFromModel: readonly number[] = []) {
    if (!isJson(json)) throw refuse("tokenizer.json", `expected an object, got ${describe(json)}`);
    if (!isJson(config)) {
      throw refuse("tokenizer_config.json", `expected an object, got ${describe(config)}`);
    }
    const model = isJson(json.model) ? json.model : undefined;
    const type = model?.type;
    if (!(SUPPORTED_MODEL_TYPES as readonly unknown[]).includes(type)) {
      throw EngineError.invalidArgument(
        `tokenizer.json: model type ${describe(type)} is not supported (${
          SUPPORTED_MODEL_TYPES.join(", ")
        })`,
      );
    }
    const added = addedTokens(json.added_tokens);
    const base = modelVocabSize(model!);
    checkComponents(json);
    checkTokenizerConfig(config);
    // The library iterates `added_tokens` unchecked; an absent list is an empty one.
    const checked = { ...json, added_tokens: json.added_tokens ?? [] };
    try {
      this.#tok = new HfTokenizer(checked, config);
    } catch (e) {
      throw EngineError.fromLibrary(LIBRARY, "tokenizer.json", e);
    }
    this.#special = new Set(added.filter((t) => t.special).map((t) => t.id));
    this.#plain = this.#special.size === 0 ? this.#tok : () => {
      const kept = (checked.added_tokens as Json[]).filter((t) => t.special !== true);
      return new HfTokenizer({ ...checked, added_tokens: kept }, config);
    };
    this.#byteLevel = isByteLevelDecoder(json.decoder);
    this.vocabSize = added.reduce((m, t) => Math.max(m, t.id + 1), base);
    const special: Record<string, string> = {};
    for (const k of ["bos_token", "eos_token", "unk_token", "pad_token"]) {
      const s = tokenString(config[k]);
      if (s !== undefined) special[k] = s;
    }
    this.specialTokens = special;
    const idOf = (k: string) => {
      const s = special[k];
      const id = s === undefined
        ? undefined
        : guarded("token_to_id", () => this.#tok.token_to_id(s));
      return id === undefined || id === null
        ? undefined
        : checkId(id, `tokenizer: ${k}`, this.vocabSize);
    };
    this.bosTokenId = idOf("bos_token");
    const eos = idOf("eos_token");
    eosFromModel.forEach((id) => checkId(id, "eos_token_id", this.vocabSize));
    this.eosTokenIds = [...new Set([...(eos === undefined ? [] : [eos]), ...eosFromModel])];
  }

  /** Ids of `text`; a tokenizer file that yields an id outside its vocabulary is refused. */
  encode(text: string, options: EncodeOptions = {}): number[] {
    if (typeof text !== "string") {
      throw refuse("tokenizer", `encode: expected a string, got ${describe(text)}`);
    }
    const ids = guarded("encode", () => {
      let tok = this.#tok;
      if (options.parseSpecial === false) {
        if (typeof this.#plain === "function") this.#plain = this.#plain();
        tok = this.#plain;
      }
      return tok.encode(text, { add_special_tokens: options.addSpecial !== false }).ids;
    });
    for (const id of ids) checkId(id, "tokenizer: encode", this.vocabSize);
    return ids;
  }

  decode(ids: readonly number[], options: { skipSpecial?: boolean } = {}): string {
    if (ids.length === 0) return "";
    return guarded("decode", () =>
      this.#tok.decode([...ids], {
        skip_special_tokens: options.skipSpecial ?? false,
        clean_up_tokenization_spaces: false,
      }));
  }

  /** Whether `id` is one of the tokenizer's special (added) tokens. */
  isSpecial(id: number): boolean {
    return this.#special.has(id);
  }

  /** A byte-fallback or byte-level piece's bytes; else the UTF-8 of the token's text. */
  tokenBytes(id: number): Uint8Array {
    const piece = this.#special.has(id)
      ? undefined
      : guarded("id_to_token", () => this.#tok.id_to_token(id));
    return (piece === undefined ? undefined : pieceBytes(piece, this.#byteLevel)) ??
      new TextEncoder().encode(this.decode([id]));
  }
}

/**
 * A tokenizer from the text of `tokenizer.json` (and `tokenizer_config.json`, as text or parsed,
 * if any). Anything malformed is `InvalidArgument`.
 */
export function parseTokenizer(
  tokenizerJson: string,
  configJson?: string | Record<string, unknown>,
  eosFromModel: readonly number[] = [],
): TextTokenizer {
  let json: unknown, config: unknown;
  try {
    json = JSON.parse(tokenizerJson);
    config = configJson === undefined
      ? {}
      : typeof configJson === "string"
      ? JSON.parse(configJson)
      : configJson;
  } catch (e) {
    throw EngineError.invalidArgument(`tokenizer: not JSON (${(e as Error).message})`, e);
  }
  if (!isJson(json)) throw refuse("tokenizer.json", `expected an object, got ${describe(json)}`);
  if (!isJson(config)) {
    throw refuse("tokenizer_config.json", `expected an object, got ${describe(config)}`);
  }
  if (json.type === "bytes") return new ByteTokenizer(json);
  return new HfTextTokenizer(json, config, eosFromModel);
}
