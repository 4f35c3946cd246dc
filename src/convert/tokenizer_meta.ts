/**
 * A checkpoint's tokenizer as GGUF `tokenizer.ggml.*` metadata, the inverse of `ggufTokenizer`:
 * - an HF byte-level BPE `tokenizer.json` becomes `gpt2` (tokens, types, merges, and the
 *   `tokenizer.ggml.pre` name of its pre-tokenizer);
 * - an HF SentencePiece-style BPE (`▁` for spaces, byte fallback to `<0xNN>`) becomes `llama`,
 *   with scores that rank each merged piece by the first merge that makes it (a GGUF `llama`
 *   vocabulary stores scores, not merges);
 * - Kiln's byte tokenizer (`{"type": "bytes"}`, fortune) becomes `gpt2` with the 256 byte
 *   symbols as ids 0-255 and no merges, which encodes text to its UTF-8 bytes;
 * - no tokenizer: a synthetic byte-level vocabulary of the model's size (ids are all a
 *   benchmark feeds).
 * Ids the model has beyond the tokenizer's are padded with unused `[PAD<id>]` tokens.
 */
import { EngineError } from "../contract/errors.ts";
import { tokenString } from "../text/tokenizer.ts";
import type { ModelConfig } from "../model/config.ts";
import { GPT2_SPLIT, HF_LLAMA3_SPLIT, HF_QWEN2_SPLIT } from "../text/gguf/pretokenizers.ts";
import { TOKEN_TYPE } from "../text/gguf/tokenizer.ts";
import { type GgufValue, GgufValueType as T } from "./writer.ts";

type Json = Record<string, unknown>;
type Meta = Record<string, GgufValue>;

/** A checkpoint's `tokenizer.json` and `tokenizer_config.json` objects. */
export interface HfTokenizerFiles {
  json: Json;
  config: Json;
}

export type TokenizerIds = Pick<ModelConfig, "vocabSize" | "bosTokenId" | "eosTokenIds">;

/** GPT-2's printable stand-ins for the 256 byte values (the byte-level BPE alphabet). */
export function byteChars(): string[] {
  const chars: string[] = [];
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    chars.push(String.fromCodePoint(printable ? b : 256 + extra++));
  }
  return chars;
}

const strings = (value: readonly string[]): GgufValue => ({
  type: T.ARRAY,
  itemType: T.STRING,
  value,
});
const ints = (value: readonly number[]): GgufValue => ({ type: T.ARRAY, itemType: T.INT32, value });
const str = (value: string): GgufValue => ({ type: T.STRING, value });
const bool = (value: boolean): GgufValue => ({ type: T.BOOL, value });

function idKeys(ids: Record<string, number | undefined>): Meta {
  const out: Meta = {};
  for (const [name, id] of Object.entries(ids)) {
    if (id !== undefined) out[`tokenizer.ggml.${name}_token_id`] = { type: T.UINT32, value: id };
  }
  return out;
}

function vocabMeta(model: string, tokens: string[], types: number[]): Meta {
  return {
    "tokenizer.ggml.model": str(model),
    "tokenizer.ggml.tokens": strings(tokens),
    "tokenizer.ggml.token_type": ints(types),
  };
}

/** A byte-level vocabulary with no merges: ids 0-255 are bytes, `names` the rest. */
function byteVocab(size: number, names: Map<number, string>, special: Set<number>): Meta {
  const bytes = size >= 256 ? byteChars() : [];
  const tokens: string[] = [];
  const types: number[] = [];
  for (let i = 0; i < size; i++) {
    const b = bytes[i];
    tokens.push(b ?? names.get(i) ?? `[PAD${i}]`);
    types.push(
      b !== undefined ? TOKEN_TYPE.normal : special.has(i) ? TOKEN_TYPE.control : TOKEN_TYPE.unused,
    );
  }
  return {
    ...vocabMeta("gpt2", tokens, types),
    "tokenizer.ggml.pre": str("default"),
    "tokenizer.ggml.merges": strings([]),
  };
}

/** The synthetic vocabulary of a checkpoint without a tokenizer. */
function syntheticVocab(c: TokenizerIds): Meta {
  const special = new Set([c.bosTokenId, ...c.eosTokenIds].filter((x) => x !== undefined));
  const names = new Map([...special].map((i) => [i, `<|kiln_${i}|>`]));
  for (let i = 256; i < c.vocabSize; i++) if (!names.has(i)) names.set(i, `<|kiln_${i}|>`);
  return {
    ...byteVocab(c.vocabSize, names, special),
    "tokenizer.ggml.add_bos_token": bool(false),
    ...idKeys({ bos: c.bosTokenId, eos: c.eosTokenIds[0] }),
  };
}

/** Kiln's byte tokenizer (`{"type":"bytes", vocab_size, bos/eos/pad_token_id}`). */
function bytesVocab(json: Json, c: TokenizerIds): Meta {
  const id = (k: string) => typeof json[k] === "number" ? json[k] as number : undefined;
  const names = new Map<number, string>();
  for (const name of ["bos", "eos", "pad"]) {
    const v = id(`${name}_token_id`);
    if (v !== undefined) names.set(v, `<${name}>`);
  }
  if ((id("vocab_size") ?? 0) > c.vocabSize) {
    throw EngineError.invalidArgument(
      `tokenizer.json: vocab_size ${id("vocab_size")} exceeds the model's ${c.vocabSize}`,
    );
  }
  return {
    ...byteVocab(c.vocabSize, names, new Set(names.keys())),
    "tokenizer.ggml.add_bos_token": bool(id("bos_token_id") !== undefined),
    "tokenizer.ggml.add_eos_token": bool(false),
    ...idKeys({ bos: id("bos_token_id"), eos: id("eos_token_id"), padding: id("pad_token_id") }),
  };
}

/** The parts of a `Sequence` (of pre-tokenizers, normalizers, processors), or the one part. */
function parts(x: unknown): Json[] {
  if (x === null || typeof x !== "object") return [];
  const j = x as Json;
  const inner = j.pretokenizers ?? j.normalizers ?? j.processors ?? j.decoders;
  return j.type === "Sequence" && Array.isArray(inner) ? inner.flatMap(parts) : [j];
}

/** The `tokenizer.ggml.pre` name for a byte-level pre-tokenizer, or undefined if unknown. */
export function preTokenizerName(pre: unknown): string | undefined {
  const ps = parts(pre);
  const regexes = ps.filter((p) => p.type === "Split")
    .map((p) => (p.pattern as Json | undefined)?.Regex);
  if (regexes.includes(HF_LLAMA3_SPLIT)) return "llama-bpe";
  if (regexes.includes(HF_QWEN2_SPLIT)) return "qwen2";
  if (regexes.includes(GPT2_SPLIT)) return "gpt-2";
  const byteLevel = ps.find((p) => p.type === "ByteLevel");
  if (regexes.length > 0 || byteLevel?.use_regex === false) return undefined;
  const digits = ps.filter((p) => p.type === "Digits");
  if (digits.length === 1 && digits[0]!.individual_digits === true && ps.length === 2) {
    return "smollm";
  }
  return ps.length === 1 && byteLevel !== undefined ? "gpt-2" : undefined;
}

/** Whether the post-processor puts `token` first (`first`) or last in a single sequence. */
function templateAdds(post: unknown, token: string | undefined, first: boolean): boolean {
  if (token === undefined) return false;
  return parts(post).some((p) => {
    if (p.type !== "TemplateProcessing" || !Array.isArray(p.single)) return false;
    const single = p.single as Json[];
    const end = first ? single[0] : single[single.length - 1];
    return ((end?.SpecialToken as Json | undefined)?.id) === token;
  });
}

function mergeText(m: unknown, i: number): string {
  if (typeof m === "string") return m;
  if (Array.isArray(m) && m.length === 2 && m.every((s) => typeof s === "string")) {
    return `${m[0]} ${m[1]}`;
  }
  throw EngineError.invalidArgument(`tokenizer.json: merge ${i} is not "a b" or [a, b]`);
}

/**
 * Whether a BPE `tokenizer.json` is SentencePiece-style (byte fallback) rather than byte-level;
 * any other model, or a BPE that is neither, is refused.
 */
function isSentencePiece(json: Json, model: Json): boolean {
  if (model.type !== "BPE") {
    throw EngineError.invalidArgument(
      `tokenizer.json: model type ${JSON.stringify(model.type)} has no GGUF form here (BPE only)`,
    );
  }
  const byteLevel = [...parts(json.pre_tokenizer), ...parts(json.decoder)]
    .some((p) => p.type === "ByteLevel");
  const spm = !byteLevel && model.byte_fallback === true;
  if (!byteLevel && !spm) {
    throw EngineError.invalidArgument(
      "tokenizer.json: a BPE that is neither byte-level nor byte-fallback SentencePiece",
    );
  }
  return spm;
}

/** The vocabulary and added tokens with their types, padded to the model's `size` ids. */
function paddedVocab(
  json: Json,
  model: Json,
  spm: boolean,
  size: number,
): { all: string[]; allTypes: number[] } {
  const tokens: (string | undefined)[] = [];
  const types: number[] = [];
  for (const [s, id] of Object.entries((model.vocab ?? {}) as Record<string, number>)) {
    tokens[id] = s;
    types[id] = spm && /^<0x[0-9A-F]{2}>$/.test(s) ? TOKEN_TYPE.byte : TOKEN_TYPE.normal;
  }
  const added = (json.added_tokens ?? []) as { id: number; content: string; special?: boolean }[];
  for (const t of added) {
    tokens[t.id] = t.content;
    types[t.id] = t.special ? TOKEN_TYPE.control : TOKEN_TYPE.userDefined;
  }
  if (tokens.length > size) {
    throw EngineError.invalidArgument(
      `tokenizer.json: ${tokens.length} tokens, more than the model's vocabulary of ${size}`,
    );
  }
  const all = Array.from({ length: size }, (_, i) => tokens[i] ?? `[PAD${i}]`);
  const allTypes = Array.from({ length: size }, (_, i) => types[i] ?? TOKEN_TYPE.unused);
  return { all, allTypes };
}

/** The `llama` vocabulary's own keys: the space prefix and the scores that rank `merges`. */
function spmMeta(json: Json, all: readonly string[], merges: readonly string[]): Meta {
  const prepend = parts(json.normalizer).some((p) => p.type === "Prepend") ||
    parts(json.pre_tokenizer).some((p) =>
      p.type === "Metaspace" && (p.prepend_scheme === "always" || p.add_prefix_space === true)
    );
  return {
    "tokenizer.ggml.add_space_prefix": bool(prepend),
    "tokenizer.ggml.scores": {
      type: T.ARRAY,
      itemType: T.FLOAT32,
      value: spmScores(all, merges),
    },
  };
}

/** The `gpt2` vocabulary's own keys: the pre-tokenizer's name (a guess warned of) and merges. */
function gpt2Meta(json: Json, merges: readonly string[], warnings: string[]): Meta {
  let pre = preTokenizerName(json.pre_tokenizer);
  if (pre === undefined) {
    warnings.push("tokenizer.json: unrecognised pre-tokenizer; wrote tokenizer.ggml.pre=default");
    pre = "default";
  }
  return {
    "tokenizer.ggml.pre": str(pre),
    "tokenizer.ggml.merges": strings(merges),
  };
}

/** An HF BPE `tokenizer.json` as a `gpt2` or `llama` GGUF vocabulary. */
function hfVocab(files: HfTokenizerFiles, c: TokenizerIds, warnings: string[]): Meta {
  const { json, config } = files;
  const model = (json.model ?? {}) as Json;
  const spm = isSentencePiece(json, model);
  const { all, allTypes } = paddedVocab(json, model, spm, c.vocabSize);
  const idOf = (name: string): number | undefined => {
    const s = tokenString(config[name]);
    const i = s === undefined ? -1 : all.indexOf(s);
    return i < 0 ? undefined : i;
  };
  const unkText = tokenString(config.unk_token) ?? tokenString(model.unk_token);
  const unk = unkText === undefined ? undefined : all.indexOf(unkText);
  if (unk !== undefined && unk >= 0) allTypes[unk] = TOKEN_TYPE.unknown;
  const bos = idOf("bos_token") ?? c.bosTokenId;
  const eos = idOf("eos_token") ?? c.eosTokenIds[0];
  const flag = (key: string, first: boolean, token: number | undefined) =>
    typeof config[key] === "boolean"
      ? config[key] as boolean
      : templateAdds(json.post_processor, token === undefined ? undefined : all[token], first);
  const merges = ((model.merges ?? []) as unknown[]).map(mergeText);
  return {
    ...vocabMeta(spm ? "llama" : "gpt2", all, allTypes),
    "tokenizer.ggml.add_bos_token": bool(flag("add_bos_token", true, bos)),
    "tokenizer.ggml.add_eos_token": bool(flag("add_eos_token", false, eos)),
    ...idKeys({
      bos,
      eos,
      unknown: unk !== undefined && unk >= 0 ? unk : undefined,
      padding: idOf("pad_token"),
    }),
    ...(spm ? spmMeta(json, all, merges) : gpt2Meta(json, merges, warnings)),
  };
}

/**
 * SentencePiece scores that rank merges as `merges` does: a piece made by merge r scores -r
 * (its first merge); other pieces score below every merge.
 */
export function spmScores(tokens: readonly string[], merges: readonly string[]): number[] {
  const rank = new Map<string, number>();
  merges.forEach((m, r) => {
    const piece = m.replace(" ", "");
    if (!rank.has(piece)) rank.set(piece, r);
  });
  return tokens.map((t) => 0 - (rank.get(t) ?? merges.length));
}

function chatTemplate(config: Json): string | undefined {
  const t = config.chat_template;
  if (typeof t === "string") return t;
  if (Array.isArray(t)) {
    const named = t as { name?: unknown; template?: unknown }[];
    const pick = named.find((x) => x.name === "default") ?? named[0];
    if (typeof pick?.template === "string") return pick.template;
  }
  return undefined;
}

/**
 * The `tokenizer.*` metadata of a checkpoint whose tokenizer files are `files` (undefined when
 * it has none). `warnings` collects what was written by a guess.
 */
export function tokenizerMetadata(
  files: HfTokenizerFiles | undefined,
  ids: TokenizerIds,
  warnings: string[] = [],
): Meta {
  if (files === undefined) return syntheticVocab(ids);
  const meta = files.json.type === "bytes"
    ? bytesVocab(files.json, ids)
    : hfVocab(files, ids, warnings);
  const template = chatTemplate(files.config);
  if (template !== undefined) meta["tokenizer.chat_template"] = str(template);
  return meta;
}
