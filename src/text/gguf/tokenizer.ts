/**
 * The tokenizer and chat template stored in a GGUF file, rebuilt as the `tokenizer.json` and
 * `tokenizer_config.json` objects `@huggingface/tokenizers` loads:
 * - `tokenizer.ggml.model = "llama"` (SentencePiece-style): a BPE whose merges come from the
 *   scores (a piece that is the concatenation of two pieces is a merge, ranked by the piece's
 *   score, highest first), `▁` for spaces, byte fallback to `<0xNN>` pieces;
 * - `tokenizer.ggml.model = "gpt2"` (byte-level BPE): the stored merges, split by the
 *   pre-tokenizer regexes `tokenizer.ggml.pre` names, as llama.cpp runs them (`pretokenizers.ts`);
 * - `tokenizer.ggml.model = "gemma4"`: as `gpt2` with the `gemma4` pre-tokenizer (merges over UTF-8
 *   characters, `▁` for spaces, byte fallback to `<0xNN>` pieces, each line and newline run apart).
 * Token types pick the added tokens (control: special; user-defined: not special).
 */
import { EngineError } from "../../contract/errors.ts";
import { ChatTemplate } from "../chat.ts";
import type { ModelText } from "../model_text.ts";
import { HfTextTokenizer } from "../tokenizer.ts";
import type { GgufMetadata } from "../../formats/gguf/metadata.ts";
import { PRE_TOKENIZERS, type PreTokenizer } from "./pretokenizers.ts";

const GEMMA4 = PRE_TOKENIZERS["gemma4"]!;

type Json = Record<string, unknown>;

/** llama.cpp's token types. */
export const TOKEN_TYPE = {
  normal: 1,
  unknown: 2,
  control: 3,
  userDefined: 4,
  unused: 5,
  byte: 6,
} as const;

const split = (regex: string) => ({
  type: "Split",
  pattern: { Regex: regex },
  behavior: "Isolated",
  invert: false,
});
const byteLevel = {
  type: "ByteLevel",
  add_prefix_space: false,
  trim_offsets: true,
  use_regex: false,
};

/** SentencePiece pieces longer than this (code units) are never the result of a merge. */
const MAX_MERGED_PIECE = 64;

interface Vocab {
  tokens: string[];
  types: number[];
  /** Token string to its first id (a null-prototype object, as tokenizer.json's `vocab`). */
  ids: Record<string, number>;
}

function readVocab(m: GgufMetadata): Vocab {
  const tokens = m.strings("tokenizer.ggml.tokens");
  if (tokens.length === 0) throw m.refuse("tokenizer.ggml.tokens", "empty vocabulary");
  const types = m.has("tokenizer.ggml.token_type")
    ? m.uints("tokenizer.ggml.token_type")
    : tokens.map(() => TOKEN_TYPE.normal);
  if (types.length !== tokens.length) {
    throw m.refuse(
      "tokenizer.ggml.token_type",
      `${types.length} types for ${tokens.length} tokens`,
    );
  }
  const ids: Record<string, number> = Object.create(null);
  tokens.forEach((t, i) => {
    if (!(t in ids)) ids[t] = i;
  });
  return { tokens, types, ids };
}

function tokenId(m: GgufMetadata, v: Vocab, name: string): number | undefined {
  const key = `tokenizer.ggml.${name}_token_id`;
  if (!m.has(key)) return undefined;
  const id = m.uint(key);
  if (id >= v.tokens.length) {
    throw m.refuse(key, `token ${id} is outside the vocabulary of ${v.tokens.length}`);
  }
  return id;
}

/**
 * Whether the added tokens of a file named `name` (`general.name`) eat the whitespace after them:
 * llama.cpp does so for Phi-3's special tokens but `<unk>`, `<s>` and `<|endoftext|>`.
 */
function rstrips(name: string): (token: string) => boolean {
  const lower = name.toLowerCase();
  if (!lower.includes("phi-3") && !lower.includes("phi3")) return () => false;
  return (token) => !["<unk>", "<s>", "<|endoftext|>"].includes(token);
}

function addedTokens(v: Vocab, rstrip: (token: string) => boolean): Json[] {
  const out: Json[] = [];
  v.types.forEach((type, id) => {
    const special = type === TOKEN_TYPE.control || type === TOKEN_TYPE.unknown;
    const content = v.tokens[id]!;
    if ((special || type === TOKEN_TYPE.userDefined) && content !== "") {
      out.push({
        id,
        content,
        single_word: false,
        lstrip: false,
        rstrip: rstrip(content),
        normalized: false,
        special,
      });
    }
  });
  return out;
}

/**
 * BPE merges of a SentencePiece vocabulary, best-scored merged piece first. As in llama.cpp, two
 * adjacent symbols merge when their concatenation is a piece, so a merge's halves are pieces or
 * single characters (which need not be pieces themselves).
 */
export function spmMerges(v: Vocab, scores: readonly number[]): [string, string][] {
  const found: { pair: [string, string]; score: number; id: number; at: number }[] = [];
  const symbol = (s: string, chars: number) => chars === 1 || v.ids[s] !== undefined;
  v.tokens.forEach((piece, id) => {
    if (v.types[id] !== TOKEN_TYPE.normal || piece.length > MAX_MERGED_PIECE) return;
    if (v.ids[piece] !== id) return;
    const chars = Array.from(piece);
    for (let i = 1; i < chars.length; i++) {
      const left = chars.slice(0, i).join("");
      const right = chars.slice(i).join("");
      if (symbol(left, i) && symbol(right, chars.length - i)) {
        found.push({ pair: [left, right], score: scores[id]!, id, at: i });
      }
    }
  });
  found.sort((a, b) => b.score - a.score || a.id - b.id || a.at - b.at);
  return found.map((f) => f.pair);
}

function templateProcessing(v: Vocab, bos: number | undefined, eos: number | undefined): Json {
  const ends = [bos, eos].filter((x) => x !== undefined) as number[];
  const special = (id: number) => ({ SpecialToken: { id: v.tokens[id]!, type_id: 0 } });
  const seq = (id: string) => ({ Sequence: { id, type_id: 0 } });
  const wrap = (inner: Json[]) => [
    ...(bos === undefined ? [] : [special(bos)]),
    ...inner,
    ...(eos === undefined ? [] : [special(eos)]),
  ];
  const specialTokens: Record<string, Json> = Object.create(null);
  for (const id of ends) {
    specialTokens[v.tokens[id]!] = { id: v.tokens[id]!, ids: [id], tokens: [v.tokens[id]!] };
  }
  return {
    type: "TemplateProcessing",
    single: wrap([seq("A")]),
    pair: [...wrap([seq("A")]), ...wrap([seq("B")])],
    special_tokens: specialTokens,
  };
}

/** The pre-tokenizer `tokenizer.ggml.pre` names (llama.cpp's `default` when absent). */
function preTokenizer(m: GgufMetadata): PreTokenizer {
  const name = m.string("tokenizer.ggml.pre", "default");
  const pre = Object.hasOwn(PRE_TOKENIZERS, name) ? PRE_TOKENIZERS[name] : undefined;
  if (pre === undefined) {
    throw m.refuse(
      "tokenizer.ggml.pre",
      `unsupported pre-tokenizer ${JSON.stringify(name)} (${
        Object.keys(PRE_TOKENIZERS).join(", ")
      })`,
    );
  }
  return pre;
}

export interface GgufTokenizer {
  /** A `tokenizer.json` object. */
  json: Json;
  /** A `tokenizer_config.json` object: special token strings, `chat_template`, add-BOS/EOS. */
  config: Json;
}

/** What differs between the kinds of tokenizer: how text becomes BPE symbols and back. */
interface Kind {
  normalizer: Json | null;
  pre_tokenizer: Json | null;
  decoder: Json;
  merges: [string, string][];
  /** Unknown symbols become `<0xNN>` byte tokens (SentencePiece-style). */
  byteFallback: boolean;
  ignoreMerges: boolean;
}

const SPACE_TO_META = { type: "Replace", pattern: { String: " " }, content: "▁" };
const META_DECODERS = [
  { type: "Replace", pattern: { String: "▁" }, content: " " },
  { type: "ByteFallback" },
  { type: "Fuse" },
];

/** `tokenizer.ggml.merges` as pairs. */
function storedMerges(m: GgufMetadata): [string, string][] {
  return m.strings("tokenizer.ggml.merges").map((s, i): [string, string] => {
    const at = s.indexOf(" ", 1);
    if (at < 0) {
      throw m.refuse("tokenizer.ggml.merges", `merge ${i} ${JSON.stringify(s)} has no space`);
    }
    return [s.slice(0, at), s.slice(at + 1)];
  });
}

/** `llama`: SentencePiece pieces and scores, `▁` for spaces (and before the text). */
function spmKind(m: GgufMetadata, v: Vocab): Kind {
  let scores: number[];
  if (m.has("tokenizer.ggml.scores")) {
    scores = m.numbers("tokenizer.ggml.scores");
    if (scores.length !== v.tokens.length) {
      throw m.refuse(
        "tokenizer.ggml.scores",
        `${scores.length} scores for ${v.tokens.length} tokens`,
      );
    }
  } else {
    scores = v.tokens.map((_, i) => -i);
  }
  const prefix = m.bool("tokenizer.ggml.add_space_prefix", true);
  return {
    normalizer: prefix
      ? { type: "Sequence", normalizers: [{ type: "Prepend", prepend: "▁" }, SPACE_TO_META] }
      : SPACE_TO_META,
    pre_tokenizer: null,
    decoder: {
      type: "Sequence",
      decoders: [
        ...META_DECODERS,
        ...(prefix ? [{ type: "Strip", content: " ", start: 1, stop: 0 }] : []),
      ],
    },
    merges: spmMerges(v, scores),
    byteFallback: true,
    ignoreMerges: false,
  };
}

/**
 * `gpt2` (and `gemma4`): the stored merges on the pieces of the `tokenizer.ggml.pre` regexes, over
 * GPT-2's byte symbols, or over UTF-8 characters with byte fallback and maybe `▁` for spaces.
 */
function bpeKind(m: GgufMetadata, pre: PreTokenizer): Kind {
  const splits = pre.splits.map(split);
  if (pre.byteLevel !== false) {
    return {
      normalizer: null,
      pre_tokenizer: { type: "Sequence", pretokenizers: [...splits, byteLevel] },
      decoder: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
      merges: storedMerges(m),
      byteFallback: false,
      ignoreMerges: pre.ignoreMerges ?? false,
    };
  }
  return {
    normalizer: pre.escapeSpaces ? SPACE_TO_META : null,
    pre_tokenizer: { type: "Sequence", pretokenizers: splits },
    decoder: {
      type: "Sequence",
      decoders: pre.escapeSpaces ? META_DECODERS : META_DECODERS.slice(1),
    },
    merges: storedMerges(m),
    byteFallback: true,
    ignoreMerges: pre.ignoreMerges ?? false,
  };
}

const KINDS = ["llama", "gpt2", "gemma4"];

/** The tokenizer of a GGUF file's metadata. */
export function ggufTokenizer(m: GgufMetadata): GgufTokenizer {
  const kind = m.string("tokenizer.ggml.model");
  if (!KINDS.includes(kind)) {
    throw m.refuse(
      "tokenizer.ggml.model",
      `unsupported tokenizer ${JSON.stringify(kind)} (${KINDS.join(", ")})`,
    );
  }
  const pre = kind === "gpt2" ? preTokenizer(m) : kind === "gemma4" ? GEMMA4 : undefined;
  const v = readVocab(m);
  const bos = tokenId(m, v, "bos");
  const eos = tokenId(m, v, "eos");
  const unk = tokenId(m, v, "unknown") ??
    (kind === "llama" ? v.types.indexOf(TOKEN_TYPE.unknown) : -1);
  const pad = tokenId(m, v, "padding");
  const addBos = bos !== undefined && (pre?.alwaysBos === true ||
    m.bool("tokenizer.ggml.add_bos_token", pre?.addBos ?? kind === "llama"));
  const addEos = m.bool("tokenizer.ggml.add_eos_token", false) && eos !== undefined;
  const k = pre ? bpeKind(m, pre) : spmKind(m, v);
  const json: Json = {
    version: "1.0",
    added_tokens: addedTokens(v, rstrips(m.string("general.name", ""))),
    normalizer: k.normalizer,
    pre_tokenizer: k.pre_tokenizer,
    post_processor: addBos || addEos
      ? templateProcessing(v, addBos ? bos : undefined, addEos ? eos : undefined)
      : null,
    decoder: k.decoder,
    model: {
      type: "BPE",
      dropout: null,
      unk_token: unk !== undefined && unk >= 0 ? v.tokens[unk] : null,
      fuse_unk: k.byteFallback,
      byte_fallback: k.byteFallback,
      ignore_merges: k.ignoreMerges,
      vocab: v.ids,
      merges: k.merges,
    },
  };
  const config: Json = { add_bos_token: addBos, add_eos_token: addEos };
  for (const [name, id] of [["bos", bos], ["eos", eos], ["unk", unk], ["pad", pad]] as const) {
    if (id !== undefined && id >= 0) config[`${name}_token`] = v.tokens[id];
  }
  if (m.has("tokenizer.chat_template")) config.chat_template = m.string("tokenizer.chat_template");
  return { json, config };
}

/** The tokenizer and chat template of a GGUF file, ready to use (`eos`: the model's EOS ids). */
export function ggufText(m: GgufMetadata, eos: readonly number[] = []): ModelText {
  const { json, config } = ggufTokenizer(m);
  let tokenizer: HfTextTokenizer;
  try {
    tokenizer = new HfTextTokenizer(json, config, eos);
  } catch (e) {
    if (e instanceof EngineError) throw EngineError.invalidArgument(`${m.file}: ${e.message}`, e);
    throw e;
  }
  return { tokenizer, chat: ChatTemplate.fromConfig(config) };
}
