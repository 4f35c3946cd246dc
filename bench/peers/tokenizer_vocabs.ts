/**
 * Small synthetic GGUF vocabularies, one per tokenizer type llama.cpp knows, learned from the
 * corpus they are tested on so that merges matter:
 * - byte-level BPE (`tokenizer.ggml.model = gpt2`): the 256 byte symbols, then up to `MERGES`
 *   merges learned on the corpus (most frequent pair first, ties by the pair's text), a few whole
 *   words no merge makes (what `ignore_merges` types take whole), and control / user-defined
 *   tokens;
 * - SentencePiece (`llama`): `<unk>`, `<s>`, `</s>`, the 256 `<0xNN>` byte-fallback tokens, then
 *   pieces learned the same way on `▁`-led words, scored by rank (best first), characters seen
 *   once left out so that byte fallback is exercised.
 * The files carry the few `llama.*` hyperparameters llama.cpp reads before the vocabulary and no
 * tensors (llama.cpp loads them with `vocab_only`).
 */
import { byteChars } from "../../src/convert/tokenizer_meta.ts";
import { TOKEN_TYPE } from "../../src/text/gguf/tokenizer.ts";
import { type GgufValue, GgufValueType as T } from "../../src/convert/writer.ts";

type Meta = Record<string, GgufValue>;

/** Merges learned for the byte-level vocabularies and pieces for the SentencePiece ones. */
export const MERGES = 900;

/** One vocabulary to write: its file name, kind and what it adds to the shared metadata. */
export interface VocabSpec {
  name: string;
  model: "gpt2" | "llama" | "gemma4";
  /** `tokenizer.ggml.pre` (gpt2; absent: llama.cpp's default). */
  pre?: string;
  /** Families that use this type (README and manifest). */
  families: string;
  /** Control tokens (special) and user-defined tokens (always split) after the learned ones. */
  control: string[];
  userDefined?: string[];
  /** Extra metadata (add_bos / add_eos / add_space_prefix flags, general.name). */
  extra?: Meta;
}

export const str = (value: string): GgufValue => ({ type: T.STRING, value });
const u32 = (value: number): GgufValue => ({ type: T.UINT32, value });
export const bool = (value: boolean): GgufValue => ({ type: T.BOOL, value });
const strings = (value: readonly string[]): GgufValue => ({
  type: T.ARRAY,
  itemType: T.STRING,
  value,
});
const ints = (value: readonly number[]): GgufValue => ({
  type: T.ARRAY,
  itemType: T.INT32,
  value,
});

/** Most frequent adjacent pair over `words` (symbol arrays with counts), merged `n` times. */
function learn(
  words: Map<string, number>,
  split: (w: string) => string[],
  n: number,
): [string, string][] {
  const seqs = [...words].map(([w, c]) => ({ s: split(w), c }));
  const merges: [string, string][] = [];
  for (let k = 0; k < n; k++) {
    const counts = new Map<string, number>();
    for (const { s, c } of seqs) {
      for (let i = 0; i + 1 < s.length; i++) {
        const key = `${s[i]}\u0000${s[i + 1]}`;
        counts.set(key, (counts.get(key) ?? 0) + c);
      }
    }
    let best: string | undefined;
    let bestCount = 1;
    for (const [key, c] of counts) {
      if (
        c > bestCount || (c === bestCount && best !== undefined && key < best)
      ) {
        best = key;
        bestCount = c;
      }
    }
    if (best === undefined) break;
    const [a, b] = best.split("\u0000") as [string, string];
    merges.push([a, b]);
    for (const q of seqs) {
      const out: string[] = [];
      for (let i = 0; i < q.s.length; i++) {
        if (i + 1 < q.s.length && q.s[i] === a && q.s[i + 1] === b) {
          out.push(a + b);
          i++;
        } else out.push(q.s[i]!);
      }
      q.s = out;
    }
  }
  return merges;
}

function count(words: string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const w of words) m.set(w, (m.get(w) ?? 0) + 1);
  return m;
}

/**
 * Training words: runs of non-space with the space before them, so that learned tokens cross the
 * boundaries of every type's split (letters and digits, cases, punctuation) and a split that
 * differs from llama.cpp's shows as different tokens. Each line counts twice: every pair in it
 * may be merged, up to `MERGES`.
 */
const WORDS = /\s?\S+|\s+/gu;
/**
 * Whitespace runs with the characters either side (every one: the matches overlap), so that some
 * tokens straddle whitespace and the splits' whitespace rules show too.
 */
const SPACES = /(?<=(\S?))(\s+)(?=(\S?))/gu;

const HPARAMS: Meta = {
  "general.architecture": str("llama"),
  "llama.block_count": u32(1),
  "llama.context_length": u32(256),
  "llama.embedding_length": u32(8),
  "llama.feed_forward_length": u32(8),
  "llama.attention.head_count": u32(1),
  "llama.attention.layer_norm_rms_epsilon": { type: T.FLOAT32, value: 1e-5 },
};

/** A byte-level BPE vocabulary learned on `corpus`. */
export function bpeVocab(spec: VocabSpec, corpus: readonly string[]): Meta {
  const chars = byteChars();
  const enc = new TextEncoder();
  const byteLevel = (w: string) => [...enc.encode(w)].map((b) => chars[b]!);
  const words = corpus.flatMap((line) => [
    ...line.match(WORDS) ?? [],
    ...[...line.matchAll(SPACES)].map((m) => m.slice(1).join("")),
  ]);
  words.push(...words);
  const merges = learn(count(words), byteLevel, MERGES);
  const tokens = [...chars];
  const seen = new Set([...tokens, ...spec.control, ...spec.userDefined ?? []]);
  const add = (t: string) => {
    if (!seen.has(t)) tokens.push(t);
    seen.add(t);
  };
  for (const [a, b] of merges) add(a + b);
  // Whole words no merge reaches: an `ignore_merges` type takes them as one token.
  for (const w of corpus.flatMap((line) => line.match(/ ?\p{L}{6,}/gu) ?? [])) {
    add(byteLevel(w).join(""));
  }
  const types: number[] = tokens.map(() => TOKEN_TYPE.normal);
  tokens.push(...spec.control, ...spec.userDefined ?? []);
  types.push(...spec.control.map(() => TOKEN_TYPE.control));
  types.push(...(spec.userDefined ?? []).map(() => TOKEN_TYPE.userDefined));
  const id = (t: string) => tokens.indexOf(t);
  return {
    ...HPARAMS,
    "tokenizer.ggml.model": str("gpt2"),
    ...(spec.pre === undefined ? {} : { "tokenizer.ggml.pre": str(spec.pre) }),
    "tokenizer.ggml.tokens": strings(tokens),
    "tokenizer.ggml.token_type": ints(types),
    "tokenizer.ggml.merges": strings(merges.map(([a, b]) => `${a} ${b}`)),
    "tokenizer.ggml.bos_token_id": u32(id(spec.control[0]!)),
    "tokenizer.ggml.eos_token_id": u32(id(spec.control[1] ?? spec.control[0]!)),
    ...spec.extra,
  };
}

/** A SentencePiece vocabulary learned on `corpus`. */
export function spmVocab(spec: VocabSpec, corpus: readonly string[]): Meta {
  const words = corpus.flatMap((line) =>
    ` ${line}`.replaceAll(" ", "▁").match(/▁*[^▁]+|▁+/gu) ?? []
  );
  words.push(...words);
  const charCount = count(words.flatMap((w) => Array.from(w)));
  const merges = learn(count(words), (w) => Array.from(w), MERGES);
  const pieces: string[] = [];
  const seen = new Set<string>([...spec.control, ...spec.userDefined ?? []]);
  for (const [a, b] of merges) {
    if (!seen.has(a + b)) pieces.push(a + b);
    seen.add(a + b);
  }
  // Each word counts twice: a character in fewer than two is left to byte fallback.
  const single = [...charCount].filter(([c, n]) => n > 2 && !seen.has(c));
  const tokens = ["<unk>", "<s>", "</s>"];
  const types: number[] = [
    TOKEN_TYPE.unknown,
    TOKEN_TYPE.control,
    TOKEN_TYPE.control,
  ];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
    types.push(TOKEN_TYPE.byte);
  }
  const base = tokens.length;
  tokens.push(...pieces, ...single.map(([c]) => c).sort());
  const scores = tokens.map((_, i) => (i < base ? 0 : -(i - base)));
  while (types.length < tokens.length) types.push(TOKEN_TYPE.normal);
  const added = [...spec.control, ...spec.userDefined ?? []];
  tokens.push(...added);
  types.push(...spec.control.map(() => TOKEN_TYPE.control));
  types.push(...(spec.userDefined ?? []).map(() => TOKEN_TYPE.userDefined));
  scores.push(...added.map(() => 0));
  return {
    ...HPARAMS,
    "tokenizer.ggml.model": str("llama"),
    "tokenizer.ggml.tokens": strings(tokens),
    "tokenizer.ggml.scores": {
      type: T.ARRAY,
      itemType: T.FLOAT32,
      value: scores,
    },
    "tokenizer.ggml.token_type": ints(types),
    "tokenizer.ggml.bos_token_id": u32(1),
    "tokenizer.ggml.eos_token_id": u32(2),
    "tokenizer.ggml.unknown_token_id": u32(0),
    ...spec.extra,
  };
}

/**
 * A vocabulary of UTF-8 tokens with spaces as `▁` (Gemma 4's, `tokenizer.ggml.model = gemma4`,
 * and Sarvam's `gpt2` one): BPE merges over characters learned on `▁`-led words and newline runs;
 * the 256 `<0xNN>` byte-fallback tokens; characters seen once left out.
 */
export function metaVocab(spec: VocabSpec, corpus: readonly string[]): Meta {
  const words = corpus.flatMap((line) =>
    line.replaceAll(" ", "▁").match(/▁*[^▁\n]+|▁+|\n+/gu) ?? []
  );
  words.push(...words);
  const charCount = count(words.flatMap((w) => Array.from(w)));
  const merges = learn(count(words), (w) => Array.from(w), MERGES);
  const tokens = ["<pad>", "<eos>", "<bos>", "<unk>"];
  const types: number[] = [
    TOKEN_TYPE.control,
    TOKEN_TYPE.control,
    TOKEN_TYPE.control,
    TOKEN_TYPE.unknown,
  ];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
    types.push(TOKEN_TYPE.byte);
  }
  const seen = new Set([...tokens, ...spec.control]);
  const add = (t: string) => {
    if (!seen.has(t)) tokens.push(t), types.push(TOKEN_TYPE.normal);
    seen.add(t);
  };
  // Each word counts twice: a character in fewer than two is left to byte fallback.
  for (const [c] of [...charCount].filter(([, n]) => n > 2).sort()) add(c);
  for (const [a, b] of merges) add(a + b);
  tokens.push(...spec.control);
  types.push(...spec.control.map(() => TOKEN_TYPE.control));
  return {
    ...HPARAMS,
    "tokenizer.ggml.model": str(spec.model),
    ...(spec.pre === undefined ? {} : { "tokenizer.ggml.pre": str(spec.pre) }),
    "tokenizer.ggml.tokens": strings(tokens),
    "tokenizer.ggml.token_type": ints(types),
    "tokenizer.ggml.merges": strings(merges.map(([a, b]) => `${a} ${b}`)),
    "tokenizer.ggml.bos_token_id": u32(2),
    "tokenizer.ggml.eos_token_id": u32(1),
    "tokenizer.ggml.unknown_token_id": u32(3),
    "tokenizer.ggml.padding_token_id": u32(0),
    ...spec.extra,
  };
}
