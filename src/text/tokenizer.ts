/**
 * Tokenizers behind one interface: the byte-level tokenizer of the fortune model, and HF
 * `tokenizer.json` files (BPE, Unigram/SentencePiece, WordPiece) through `@huggingface/tokenizers`,
 * the tokenizer library transformers.js is built on, rather than a hand-written BPE.
 */
import { Tokenizer as HfTokenizer } from "@huggingface/tokenizers";
import { EngineError } from "../contract/errors.ts";

export interface TextTokenizer {
  readonly vocabSize: number;
  /** Ids the model ends a sequence with. */
  readonly eosTokenIds: readonly number[];
  readonly bosTokenId: number | undefined;
  /** Special tokens' strings by name (`bos_token`, `eos_token`, ...) for chat templates. */
  readonly specialTokens: Readonly<Record<string, string>>;
  /** `addSpecial`: add what the tokenizer adds around a text (BOS for Llama; default true). */
  encode(text: string, options?: { addSpecial?: boolean }): number[];
  /** Text of `ids`; may end in U+FFFD when the ids stop inside a UTF-8 character. */
  decode(ids: readonly number[], options?: { skipSpecial?: boolean }): string;
  isSpecial(id: number): boolean;
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

/** `fortune`'s tokenizer: ids 0-255 are UTF-8 bytes, then a few special tokens. */
export class ByteTokenizer implements TextTokenizer {
  readonly vocabSize: number;
  readonly eosTokenIds: readonly number[];
  readonly bosTokenId: number | undefined;
  readonly specialTokens: Readonly<Record<string, string>>;
  readonly #names = new Map<number, string>();

  constructor(json: Json) {
    const id = (k: string) => typeof json[k] === "number" ? json[k] as number : undefined;
    this.vocabSize = id("vocab_size") ?? 256;
    this.bosTokenId = id("bos_token_id");
    const eos = id("eos_token_id");
    this.eosTokenIds = eos === undefined ? [] : [eos];
    const special: Record<string, string> = {};
    for (const name of ["bos", "eos", "pad"]) {
      const v = id(`${name}_token_id`);
      if (v === undefined) continue;
      special[`${name}_token`] = `<${name}>`;
      this.#names.set(v, `<${name}>`);
    }
    this.specialTokens = special;
  }

  encode(text: string, options: { addSpecial?: boolean } = {}): number[] {
    const bytes = [...new TextEncoder().encode(text)];
    return options.addSpecial !== false && this.bosTokenId !== undefined
      ? [this.bosTokenId, ...bytes]
      : bytes;
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

  isSpecial(id: number): boolean {
    return id >= 256;
  }
}

/** An HF `tokenizer.json` (+ `tokenizer_config.json`) through `@huggingface/tokenizers`. */
export class HfTextTokenizer implements TextTokenizer {
  readonly vocabSize: number;
  readonly eosTokenIds: readonly number[];
  readonly bosTokenId: number | undefined;
  readonly specialTokens: Readonly<Record<string, string>>;
  readonly #tok: HfTokenizer;
  readonly #special: Set<number>;

  constructor(json: Json, config: Json = {}, eosFromModel: readonly number[] = []) {
    const model = json.model as Json | undefined;
    const type = model?.type;
    if (!(SUPPORTED_MODEL_TYPES as readonly unknown[]).includes(type)) {
      throw EngineError.invalidArgument(
        `tokenizer.json: model type ${JSON.stringify(type)} is not supported (${
          SUPPORTED_MODEL_TYPES.join(", ")
        })`,
      );
    }
    try {
      this.#tok = new HfTokenizer(json, config);
    } catch (e) {
      throw EngineError.invalidArgument(`tokenizer.json: ${(e as Error).message}`, e);
    }
    const added = (json.added_tokens ?? []) as { id: number; content: string; special?: boolean }[];
    this.#special = new Set(added.filter((t) => t.special).map((t) => t.id));
    const vocab = (model?.vocab ?? {}) as Record<string, number> | [string, number][];
    const base = Array.isArray(vocab) ? vocab.length : Object.keys(vocab).length;
    this.vocabSize = Math.max(base, ...added.map((t) => t.id + 1));
    const special: Record<string, string> = {};
    for (const k of ["bos_token", "eos_token", "unk_token", "pad_token"]) {
      const s = tokenString(config[k]);
      if (s !== undefined) special[k] = s;
    }
    this.specialTokens = special;
    const idOf = (s: string | undefined) => s === undefined ? undefined : this.#tok.token_to_id(s);
    this.bosTokenId = idOf(special.bos_token);
    const eos = idOf(special.eos_token);
    this.eosTokenIds = [...new Set([...(eos === undefined ? [] : [eos]), ...eosFromModel])];
  }

  encode(text: string, options: { addSpecial?: boolean } = {}): number[] {
    return this.#tok.encode(text, { add_special_tokens: options.addSpecial !== false }).ids;
  }

  decode(ids: readonly number[], options: { skipSpecial?: boolean } = {}): string {
    if (ids.length === 0) return "";
    return this.#tok.decode([...ids], {
      skip_special_tokens: options.skipSpecial ?? false,
      clean_up_tokenization_spaces: false,
    });
  }

  isSpecial(id: number): boolean {
    return this.#special.has(id);
  }
}

/** A tokenizer from the text of `tokenizer.json` (and `tokenizer_config.json`, if any). */
export function parseTokenizer(
  tokenizerJson: string,
  configJson?: string,
  eosFromModel: readonly number[] = [],
): TextTokenizer {
  let json: Json, config: Json;
  try {
    json = JSON.parse(tokenizerJson) as Json;
    config = configJson === undefined ? {} : JSON.parse(configJson) as Json;
  } catch (e) {
    throw EngineError.invalidArgument(`tokenizer: not JSON (${(e as Error).message})`, e);
  }
  if (json === null || typeof json !== "object") {
    throw EngineError.invalidArgument("tokenizer.json: not an object");
  }
  if (json.type === "bytes") return new ByteTokenizer(json);
  return new HfTextTokenizer(json, config, eosFromModel);
}
