/**
 * The pre-tokenizers `tokenizer.ggml.pre` names, as llama.cpp (src/llama-vocab.cpp) runs them on
 * a `gpt2` (BPE) vocabulary: a list of regexes applied in turn (each splits every piece the
 * previous one left, keeping the text between matches as pieces of its own), then the byte-level
 * map (but for the few types whose tokens are UTF-8 text) and the merges. The regexes here are JavaScript's spelling of llama.cpp's with
 * llama.cpp's meaning: where llama.cpp adapted a tokenizer.json regex for its engine (case-blind
 * contractions spelt out; the Lu/Ll classes of GPT-4o and Tekken as "a letter that is not a-z" and
 * "a letter that is not A-Z", which is what they match there), this is the adapted form.
 */

/** GPT-2's split (llama.cpp matches its hand-written version of it, trailing `\s+` included). */
export const GPT2_SPLIT = String
  .raw`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`;
/** Contractions with llama.cpp's case folding spelt out. */
const CONTRACTIONS = String
  .raw`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])`;
/** Llama 3's split. */
export const LLAMA3_SPLIT = String
  .raw`${CONTRACTIONS}|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
/** Llama 3's and Qwen2's splits as their `tokenizer.json` files spell them. */
export const HF_LLAMA3_SPLIT = String
  .raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
export const HF_QWEN2_SPLIT = String
  .raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
/** Qwen2's split: Llama 3's with single digits. */
export const QWEN2_SPLIT = String
  .raw`${CONTRACTIONS}|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
/** A letter llama.cpp's GPT-4o and Tekken splits take as upper case, and as lower case. */
const UPPER = String.raw`(?:(?=\p{L})[^a-z])`;
const LOWER = String.raw`(?:(?=\p{L})[^A-Z])`;
const GPT4O_SPLIT = String
  .raw`[^\r\n\p{L}\p{N}]?${UPPER}*${LOWER}+${CONTRACTIONS}?|[^\r\n\p{L}\p{N}]?${UPPER}+${LOWER}*${CONTRACTIONS}?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const TEKKEN_SPLIT = String
  .raw`[^\r\n\p{L}\p{N}]?${UPPER}*${LOWER}+|[^\r\n\p{L}\p{N}]?${UPPER}+${LOWER}*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
/**
 * DeepSeek LLM's letter ranges, as llama.cpp lists them (escaped: Unicode normalization changes
 * some of these characters, Ω and K among them, into others).
 */
const DEEPSEEK_LETTERS = String
  .raw`A-Za-z\u{B5}\u{C0}-\u{D6}\u{D8}-\u{F6}\u{F8}-\u{1BA}\u{1BC}-\u{1BF}\u{1C4}-\u{293}\u{295}-\u{2AF}\u{370}-\u{373}\u{376}\u{377}\u{37B}-\u{37D}\u{37F}\u{386}\u{388}-\u{38A}\u{38C}\u{38E}-\u{3A1}\u{3A3}-\u{3F5}\u{3F7}-\u{481}\u{48A}-\u{52F}\u{531}-\u{556}\u{10A0}-\u{10C5}\u{13A0}-\u{13F5}\u{13F8}-\u{13FD}\u{1C90}-\u{1CBA}\u{1CBD}-\u{1CBF}\u{1D00}-\u{1D2B}\u{1D6B}-\u{1D77}\u{1D79}-\u{1D9A}\u{1E00}-\u{1F15}\u{1F18}-\u{1F1D}\u{1F20}-\u{1F45}\u{1F48}-\u{1F4D}\u{1F50}-\u{1F57}\u{1F59}\u{1F5B}\u{1F5D}\u{1F5F}-\u{1F7D}\u{1F80}-\u{1FB4}\u{1FB6}-\u{1FBC}\u{1FBE}\u{1FC2}-\u{1FC4}\u{1FC6}-\u{1FCC}\u{1FD0}-\u{1FD3}\u{1FD6}-\u{1FDB}\u{1FE0}-\u{1FEC}\u{1FF2}-\u{1FF4}\u{1FF6}-\u{1FFC}\u{2102}\u{2107}\u{210A}-\u{2113}\u{2115}\u{2119}-\u{211D}\u{2124}\u{2126}\u{2128}\u{212A}-\u{212D}\u{212F}-\u{2134}\u{2139}\u{213C}-\u{213F}\u{2145}-\u{2149}\u{214E}\u{2183}\u{2184}\u{2C00}-\u{2C7B}\u{2C7E}-\u{2CE4}\u{2CEB}-\u{2CEE}\u{2CF2}\u{2CF3}\u{A640}-\u{A66D}\u{A680}-\u{A69B}\u{A722}-\u{A76F}\u{A771}-\u{A787}\u{A78B}-\u{A78E}\u{AB70}-\u{ABBF}\u{FB00}-\u{FB06}\u{FB13}-\u{FB17}\u{FF21}-\u{FF3A}\u{FF41}-\u{FF5A}\u{10400}-\u{1044F}\u{104B0}-\u{104D3}\u{104D8}-\u{104FB}\u{10C80}-\u{10CB2}\u{10CC0}-\u{10CF2}\u{118A0}-\u{118DF}\u{1E900}-\u{1E943}`;
/** How llama.cpp tokenizes with one `tokenizer.ggml.pre`. */
export interface PreTokenizer {
  /** Regexes applied in turn. */
  splits: readonly string[];
  /** A piece that is a whole vocabulary token is that token, merges or not. */
  ignoreMerges?: boolean;
  /** Whether BOS is added when the file has no `tokenizer.ggml.add_bos_token`. */
  addBos?: boolean;
  /** BOS is added whatever `tokenizer.ggml.add_bos_token` says (Gemma 4). */
  alwaysBos?: boolean;
  /**
   * false: tokens are UTF-8 text, not GPT-2's byte symbols, with `<0xNN>` byte tokens for what no
   * token spells (default true).
   */
  byteLevel?: boolean;
  /** Spaces are `▁` in the tokens (SentencePiece-style). */
  escapeSpaces?: boolean;
}

const GPT2: PreTokenizer = { splits: [GPT2_SPLIT] };
const QWEN2: PreTokenizer = { splits: [QWEN2_SPLIT] };
const DIGITS_GPT2: PreTokenizer = { splits: [String.raw`\p{N}`, GPT2_SPLIT] };
const LLAMA3: PreTokenizer = {
  splits: [LLAMA3_SPLIT],
  ignoreMerges: true,
  addBos: true,
};
const DBRX: PreTokenizer = { splits: [LLAMA3_SPLIT] };
const GPT4O: PreTokenizer = { splits: [GPT4O_SPLIT] };
const BAILING: PreTokenizer = {
  splits: [
    String
      .raw`'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+`,
  ],
};
const DEEPSEEK3: PreTokenizer = {
  splits: [
    String.raw`\p{N}{1,3}`,
    String.raw`[\u{4E00}-\u{9FA5}\u{3040}-\u{309F}\u{30A0}-\u{30FF}]+`,
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|" +
    " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
  ],
};

/**
 * llama.cpp matches `\p{Lu}`, `\p{Ll}`, `\p{Lt}`, `\p{Lm}` and `\p{Lo}` as any letter (its
 * engine sees one class per letter, and A-Za-z for each): `LETTER_MARK` stands for each of them
 * with `\p{M}`.
 */
const LETTER_MARK = String.raw`[\p{L}\p{M}]`;
const YOUTU: PreTokenizer = {
  splits: [
    String
      .raw`[\u{AC00}-\u{D7A3}\u{3131}-\u{318E}]+|[\u{FF01}\u{2026}\u{201C}\u{201D}\u{2018}\u{2019}\u{2014}\u{FF1A}\u{FF1B}\u{FF0C}\u{3001}-\u{303F}\u{FE30}-\u{FE4F}]+|[\u{3105}-\u{312F}]+|[\u{4E00}-\u{9FA5}\u{3040}-\u{309F}\u{30A0}-\u{30FF}]+`,
    String
      .raw`[^\r\n\p{L}\p{N}]?${LETTER_MARK}*${LETTER_MARK}+${CONTRACTIONS}?|[^\r\n\p{L}\p{N}]?${LETTER_MARK}+${LETTER_MARK}*${CONTRACTIONS}?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
  ],
  ignoreMerges: true,
};
/** BLOOM's split: a space, then anything up to whitespace or `(|.,!?…。，、।۔،)`. */
const BLOOM: PreTokenizer = {
  splits: [String.raw` ?[^(\s|.,!?\u{2026}\u{3002}\u{FF0C}\u{3001}\u{964}\u{6D4}\u{60C})]+`],
};
const FALCON: PreTokenizer = {
  splits: [
    String.raw`[\p{P}$+<=>^~|\x60]+`,
    GPT2_SPLIT,
    "[0-9][0-9][0-9]",
  ],
};
/** Llama 3's split with one whitespace rule per power of two up to 512 (Jais 2). */
const JAIS2_SPLIT = String
  .raw`${CONTRACTIONS}|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1}`;

/**
 * Digit runs in groups of three from the right (llama.cpp's hand-written AFMoE split, which Tiny
 * Aya's `\d{1,3}(?=(?:\d{3})*\b)` runs too; it leaves the text before a run joined to the run's
 * first group, which the next split always parts again).
 */
const DIGITS_BY_THREE = String.raw`\p{N}{1,3}(?=(?:\p{N}{3})*(?!\p{N}))`;
/** Han as llama.cpp's Kimi K2 split counts it (CJK ideographs and their extensions). */
const HAN = String
  .raw`[\u{4E00}-\u{9FFF}\u{3400}-\u{4DBF}\u{20000}-\u{2A6DF}\u{2A700}-\u{2EBEF}\u{F900}-\u{FAFF}\u{2F800}-\u{2FA1F}]`;
const TINY_AYA: PreTokenizer = {
  splits: [
    DIGITS_BY_THREE,
    String
      .raw`[^\r\n\p{L}\p{N}]?${LETTER_MARK}*${LETTER_MARK}+${CONTRACTIONS}?|[^\r\n\p{L}\p{N}]?${LETTER_MARK}+${LETTER_MARK}*${CONTRACTIONS}?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
  ],
};
const KIMI_K2_SPLIT = String
  .raw`${HAN}+|[^\r\n\p{L}\p{N}]?(?:(?!${HAN})\p{L})+${CONTRACTIONS}?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;

/** Gemma 4's: lines and newline runs apart, spaces as `▁`, UTF-8 tokens, BOS always. */
const GEMMA4: PreTokenizer = {
  splits: [String.raw`[^\n]+|\n+`],
  byteLevel: false,
  escapeSpaces: true,
  alwaysBos: true,
};

/** `tokenizer.ggml.pre` values and their pre-tokenizers (llama.cpp's names, aliases included). */
export const PRE_TOKENIZERS: Readonly<Record<string, PreTokenizer>> = {
  // A file without the key is llama.cpp's default too.
  "default": {
    splits: [
      String.raw`[\p{P}$+<=>^~|]+`,
      GPT2_SPLIT,
      String.raw`\p{N}+`,
      "[0-9][0-9][0-9]",
    ],
  },
  "gpt-2": GPT2,
  "phi-2": GPT2,
  "olmo": GPT2,
  "mpt": GPT2,
  "jais": GPT2,
  "trillion": GPT2,
  "granite-docling": GPT2,
  "exaone4": GPT2,
  "jina-es": GPT2,
  "jina-de": GPT2,
  "jina-v2-es": GPT2,
  "jina-v2-de": GPT2,
  "gigachat": GPT2,
  "a.x-4.0": GPT2,
  "mellum": GPT2,
  "modern-bert": GPT2,
  "llama3": LLAMA3,
  "llama-v3": LLAMA3,
  "llama-bpe": LLAMA3,
  "falcon3": LLAMA3,
  "falcon-h1": LLAMA3,
  "pixtral": LLAMA3,
  "midm-2.0": LLAMA3,
  "lfm2": LLAMA3,
  "jina-v5-nano": LLAMA3,
  "dbrx": DBRX,
  "smaug-bpe": DBRX,
  "qwen2": QWEN2,
  "deepseek-r1-qwen": QWEN2,
  "megrez": QWEN2,
  "stablelm2": QWEN2,
  "hunyuan": QWEN2,
  "smollm": DIGITS_GPT2,
  "starcoder": DIGITS_GPT2,
  "refact": DIGITS_GPT2,
  "command-r": DIGITS_GPT2,
  "codeshell": DIGITS_GPT2,
  "exaone": DIGITS_GPT2,
  "minerva-7b": DIGITS_GPT2,
  "mellum2": DIGITS_GPT2,
  "gpt-4o": GPT4O,
  "llama4": GPT4O,
  "minimax-m2": GPT4O,
  "kanana2": GPT4O,
  "talkie": GPT4O,
  "tekken": { splits: [TEKKEN_SPLIT], ignoreMerges: true, addBos: true },
  // llama.cpp matches regexes without Unicode classes on text whose non-ASCII whitespace it has
  // replaced by U+000B, so a range that holds whitespace (U+3000; U+2000-U+200A and more in
  // U+0800-U+4E00) never matches it there: the `(?!\s)` before those ranges (here and in
  // deepseek-coder) says the same.
  "deepseek-llm": {
    splits: [
      String.raw`[\r\n]`,
      String.raw`\s?[${DEEPSEEK_LETTERS}]+`,
      String
        .raw`\s?(?:(?!\s)[!-/:-~\u{FF01}-\u{FF0F}\u{FF1A}-\u{FF5E}\u{2018}-\u{201F}\u{3000}-\u{3002}])+`,
      String.raw`\s+$`,
      String
        .raw`(?:(?!\s)[\u{4E00}-\u{9FA5}\u{800}-\u{4E00}\u{AC00}-\u{D7FF}])+`,
      String.raw`\p{N}+`,
    ],
  },
  "deepseek-v3": DEEPSEEK3,
  "hunyuan-dense": DEEPSEEK3,
  "joyai-llm": DEEPSEEK3,
  "hy_v4": DEEPSEEK3,
  "qwen35": {
    splits: [
      String
        .raw`${CONTRACTIONS}|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
    ],
  },
  "seed-coder": {
    splits: [
      String
        .raw`${CONTRACTIONS}|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+`,
    ],
  },
  "bailingmoe": BAILING,
  "bailingmoe2": BAILING,
  "llada-moe": BAILING,
  "ufakzeka": {
    splits: [
      String
        .raw`[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
    ],
  },
  "grok-2": QWEN2,
  "kormo": QWEN2,
  "f2llmv2": QWEN2,
  "solar-open": QWEN2,
  "glm4": DBRX,
  "chatglm-bpe": DBRX,
  "jais-2": { splits: [JAIS2_SPLIT] },
  "minicpm5": {
    splits: [
      String.raw`\p{N}{1,3}`,
      String
        .raw`${CONTRACTIONS}|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
    ],
    ignoreMerges: true,
  },
  "laguna": { splits: [String.raw`[^\n]+|\n+`, QWEN2_SPLIT] },
  "exaone-moe": {
    splits: [
      String
        .raw`${CONTRACTIONS}|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+`,
    ],
  },
  "youtu": YOUTU,
  // llama.cpp's hand-written Kimi K2 split: letters are any letters but Han, cases apart or not.
  "kimi-k2": { splits: [KIMI_K2_SPLIT] },
  "afmoe": {
    splits: [
      DIGITS_BY_THREE,
      String
        .raw`[\u{4E00}-\u{9FFF}\u{3400}-\u{4DBF}\u{8C48}-\u{FAFF}\u{3040}-\u{309F}\u{30A0}-\u{30FF}\u{FF65}-\u{FF9F}\u{2F00}-\u{2FDF}\u{E40}-\u{E7F}\u{E80}-\u{EFF}\u{1780}-\u{17FF}\u{1000}-\u{109F}\u{AA60}-\u{AA7F}\u{A9E0}-\u{A9FF}\u{AC00}-\u{D7AF}\u{1100}-\u{11FF}]+`,
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|" +
      " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
    ],
  },
  "tiny_aya": TINY_AYA,
  // llama.cpp takes `tokenizer.ggml.model = gemma4` as this whatever the pre key says.
  "gemma4": GEMMA4,
  "granite-embed-multi-311m": GEMMA4,
  "sarvam-moe": { ...GEMMA4, alwaysBos: false },
  // Digit runs, then (zero-width matches between them) groups of three ASCII digits from the
  // right: llama.cpp's `\d` is [0-9].
  "superbpe": { splits: [String.raw`\p{N}+`, String.raw`(?=(?:[0-9]{3})+(?![0-9]))`] },
  "spark2_5": {
    splits: [
      String.raw`\p{N}{1,3}`,
      String.raw`[\u{4E00}-\u{9FA5}\u{3040}-\u{309F}\u{30A0}-\u{30FF}]+`,
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|" +
      " ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
      String.raw`\p{N}`,
    ],
  },
  "cohere2moe": TINY_AYA,
  "falcon": FALCON,
  "bloom": BLOOM,
  "poro-chat": BLOOM,
  "gpt3-finnish": BLOOM,
  "viking": { splits: [...BLOOM.splits, String.raw`\p{N}`] },
  "deepseek-coder": {
    splits: [
      String.raw`[\r\n]`,
      String.raw`\s?\p{L}+`,
      String.raw`\s?\p{P}+`,
      String
        .raw`(?:(?!\s)[\u{4E00}-\u{9FA5}\u{800}-\u{4E00}\u{AC00}-\u{D7FF}])+`,
      String.raw`\p{N}`,
    ],
  },
};
