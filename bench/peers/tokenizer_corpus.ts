/**
 * Writes `test/fixtures/tokenizers/`: for each tokenizer type the popular model families use, a
 * small synthetic GGUF vocabulary (`tokenizer_vocabs.ts`) and llama.cpp's own tokenization of a
 * fixed multilingual corpus with it (`llama_vocab.ts`: `llama_tokenize` on node-llama-cpp's
 * libllama), the ground truth `src/model/gguf/tokenizer_llamacpp_test.ts` holds Kiln to.
 *
 *   node_modules/.bin/deno run -A bench/peers/tokenizer_corpus.ts [--out DIR]
 *
 * Per type and line, `expected.json` keeps the ids with `add_special` and `parse_special` (what
 * Kiln's `encode` does); the ids with neither (special-token text taken as text), where they
 * differ from the first less BOS / EOS; and the text llama.cpp detokenizes the first back to (less
 * BOS / EOS, `remove_special` off, `unparse_special` on), where that is not the line itself. The
 * manifest says per type whether `add_special` adds BOS and EOS.
 */
import { runCli } from "../../src/adapters/deno/flags.ts";
import { encodeGguf } from "../../src/model/gguf/writer.ts";
import { openLlamaTokenizers } from "./llama_vocab.ts";
import { bool, bpeVocab, metaVocab, spmVocab, str, type VocabSpec } from "./tokenizer_vocabs.ts";

/** Code, emoji (ZWJ sequences, flags, skin tones), CJK, RTL, whitespace runs, digits, specials. */
export const CORPUS: readonly string[] = [
  "Hello world! The quick brown fox jumps over the lazy dog.",
  "hello hello Hello HELLO hElLo",
  "I'm sure they're here; we've done it, you'll see, he'd said. DON'T SHOUT, it's OK'S",
  "function add(a, b) {\n  return a + b;\n}\n",
  "def tokenize(text: str) -> list[int]:\n\treturn [ord(c) for c in text]  # comment\n",
  "if (x != y && z >= 10) { arr[i++] = `${name}`; }",
  "    four spaces, then\ttab,\t\ttwo tabs;   three spaces   ",
  "line one\nline two\n\nline four\r\nwindows line\r\n\n\n",
  "   leading and trailing   ",
  "x\n                y = 16;\n     z = 5;\n\t\t\t\tw = 4;        \n",
  "1234567890 12 123 1234 12345 3.14159 -42 1,000,000 0x1F",
  "Phone: +1 (555) 012-3456, year 2024, ²³ ½ ٣٤٥",
  "emoji 😀😃 👍🏽 family 👨‍👩‍👧‍👦 flag 🇫🇷 heart ❤️ keycap 1️⃣",
  "你好，世界！今天天气很好。",
  "中文，　全角空格。　结束",
  "日本語のテキストとカタカナ、ひらがな。",
  "한국어 텍스트입니다.",
  "مرحبا بالعالم، هذا نص عربي.",
  "שלום עולם, זה טקסט בעברית.",
  "Привет, мир! Ёжик в тумане.",
  "Ελληνικά γράμματα και τόνοι.",
  "Ünïcödé àccénts: naïve café résumé Straße ÆØÅ",
  "combining marks: e\u0301te\u0301 n\u0303o, हिन्दी नमस्ते, ไทย สวัสดีครับ",
  "mixed: Hello世界123abc ДаNet",
  "camelCaseWord PascalCase snake_case SCREAMING_CASE iPhone McDonald's",
  "HTTPServer XMLHttpRequest getHTTPResponseCode IOError ÀÉÎ éÀ aÄb ÄÖü ÉCOLE école ǅungla",
  "WE'LL THEY'RE I'D YOU'VE she'S it'LL O'Neil rock'n'roll",
  "nbsp\u00a0here, ideographic\u3000space, thin\u2009space",
  "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
  "<s>[INST] What is 2+2? [/INST] 4</s>",
  "<start_of_turn>user\nhello<end_of_turn>\n<start_of_turn>model\n",
  "<|user|>\nhi<|end|>\n<|assistant|>",
  "<|endoftext|>text after<|endoftext|>",
  "<|begin_of_text|>hi<|eot_id|> <｜begin▁of▁sentence｜>x<｜end▁of▁sentence｜> [BOS]y[EOS] " +
  "<[begin▁of▁sentence]>z [gMASK]<sop>>>ABSTRACT<<<fim_prefix><BOS_TOKEN>",
  "a",
  " ",
  "\n",
  "",
];

const CHATML = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];

/** The tokenizer types and the families that use them. */
export const SPECS: readonly VocabSpec[] = [
  {
    name: "spm-llama",
    model: "llama",
    families: "Llama 1/2, Mistral 7B v0.1-v0.3, TinyLlama (SentencePiece)",
    control: ["[INST]", "[/INST]"],
    extra: { "tokenizer.ggml.add_bos_token": bool(true) },
  },
  {
    name: "spm-gemma",
    model: "llama",
    families: "Gemma 1/2/3 (SentencePiece, no space prefix, byte fallback)",
    control: ["<start_of_turn>", "<end_of_turn>"],
    userDefined: ["\t\t", "    "],
    extra: {
      "tokenizer.ggml.add_bos_token": bool(true),
      "tokenizer.ggml.add_space_prefix": bool(false),
    },
  },
  {
    name: "gemma4",
    model: "gemma4",
    families: "Gemma 4 (BPE over UTF-8 with ▁ for spaces and byte fallback; BOS always)",
    control: ["<start_of_turn>", "<end_of_turn>"],
    extra: { "tokenizer.ggml.add_bos_token": bool(false) },
  },
  {
    name: "sarvam-moe",
    model: "gpt2",
    pre: "sarvam-moe",
    families: "Sarvam MoE (as Gemma 4's, BOS as the flag says)",
    control: CHATML,
  },
  {
    name: "spm-phi3",
    model: "llama",
    families: "Phi-3 mini / medium (SentencePiece; llama.cpp strips the whitespace after its " +
      "special tokens, by general.name)",
    control: ["<|endoftext|>", "<|user|>", "<|assistant|>", "<|end|>", "<|system|>"],
    extra: {
      "general.name": str("Phi-3-mini-4k-instruct"),
      "tokenizer.ggml.add_bos_token": bool(false),
    },
  },
  {
    name: "bpe-default",
    model: "gpt2",
    families: "files without tokenizer.ggml.pre (llama.cpp's default split)",
    control: CHATML,
  },
  {
    name: "gpt-2",
    model: "gpt2",
    pre: "gpt-2",
    families: "GPT-2, Phi-2 (as phi-2), Phi-1.5",
    control: ["<|endoftext|>"],
  },
  {
    name: "llama-bpe",
    model: "gpt2",
    pre: "llama-bpe",
    families: "Llama 3/3.1/3.2/3.3 (BOS by default, ignore_merges)",
    control: ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"],
  },
  {
    name: "qwen2",
    model: "gpt2",
    pre: "qwen2",
    families: "Qwen 1.5/2/2.5/3, DeepSeek-R1 distills of Qwen",
    control: CHATML,
    extra: { "tokenizer.ggml.add_bos_token": bool(false) },
  },
  {
    name: "smollm",
    model: "gpt2",
    pre: "smollm",
    families: "SmolLM 1/2 (single digits, then GPT-2's split)",
    control: CHATML,
  },
  {
    name: "olmo",
    model: "gpt2",
    pre: "olmo",
    families: "OLMo, OLMo 2",
    control: ["<|endoftext|>", "<|padding|>"],
    userDefined: ["  ", "   "],
  },
  {
    name: "gpt-4o",
    model: "gpt2",
    pre: "gpt-4o",
    families: "Phi-4 mini, Llama 4 (as llama4)",
    control: ["<|endoftext|>", "<|end|>", "<|user|>", "<|assistant|>"],
  },
  {
    name: "deepseek-llm",
    model: "gpt2",
    pre: "deepseek-llm",
    families: "DeepSeek LLM 7B/67B",
    control: ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"],
    extra: { "tokenizer.ggml.add_bos_token": bool(true) },
  },
  {
    name: "deepseek-v3",
    model: "gpt2",
    pre: "deepseek-v3",
    families: "DeepSeek V3/R1",
    control: ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"],
    extra: { "tokenizer.ggml.add_bos_token": bool(true) },
  },
  {
    name: "tekken",
    model: "gpt2",
    pre: "tekken",
    families: "Mistral Nemo, Mistral Small 3 (Tekken, BOS by default, ignore_merges)",
    control: ["<s>", "</s>", "[INST]", "[/INST]"],
  },
  {
    name: "starcoder",
    model: "gpt2",
    pre: "starcoder",
    families: "StarCoder 1/2 (single digits, then GPT-2's split; as smollm, refact, command-r)",
    control: ["<|endoftext|>", "<fim_prefix>"],
  },
  {
    name: "stablelm2",
    model: "gpt2",
    pre: "stablelm2",
    families: "StableLM 2 (Qwen2's split)",
    control: ["<|endoftext|>"],
    extra: { "tokenizer.ggml.add_eos_token": bool(true) },
  },
  {
    name: "falcon",
    model: "gpt2",
    pre: "falcon",
    families: "Falcon 7B/40B/180B",
    control: ["<|endoftext|>", ">>ABSTRACT<<"],
  },
  {
    name: "deepseek-coder",
    model: "gpt2",
    pre: "deepseek-coder",
    families: "DeepSeek Coder 1.3B-33B",
    control: ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"],
    extra: { "tokenizer.ggml.add_bos_token": bool(true) },
  },
  {
    name: "qwen35",
    model: "gpt2",
    pre: "qwen35",
    families: "Qwen 3.5 (marks joined to letters)",
    control: CHATML,
    extra: { "tokenizer.ggml.add_bos_token": bool(false) },
  },
  {
    name: "seed-coder",
    model: "gpt2",
    pre: "seed-coder",
    families: "ByteDance Seed-Coder",
    control: ["<[begin▁of▁sentence]>", "<[end▁of▁sentence]>"],
  },
  {
    name: "glm4",
    model: "gpt2",
    pre: "glm4",
    families: "GLM-4, GLM-4.5 (Llama 3's split, merges used)",
    control: ["[gMASK]", "<sop>", "<|user|>", "<|assistant|>"],
  },
  {
    name: "exaone-moe",
    model: "gpt2",
    pre: "exaone-moe",
    families: "EXAONE MoE (letters with spaces between)",
    control: ["[BOS]", "[EOS]"],
  },
  {
    name: "bailingmoe",
    model: "gpt2",
    pre: "bailingmoe",
    families: "Ling / Ring (BailingMoE), LLaDA-MoE",
    control: ["<|startoftext|>", "<|endoftext|>"],
  },
  {
    name: "minicpm5",
    model: "gpt2",
    pre: "minicpm5",
    families: "MiniCPM 5 (1-3 digit groups, ignore_merges)",
    control: CHATML,
  },
  {
    name: "youtu",
    model: "gpt2",
    pre: "youtu",
    families: "Youtu-LLM (CJK runs first, ignore_merges)",
    control: ["<|begin_of_text|>", "<|end_of_text|>"],
  },
  {
    name: "kimi-k2",
    model: "gpt2",
    pre: "kimi-k2",
    families: "Kimi K2 (Han runs apart, llama.cpp's hand-written split)",
    control: ["[BOS]", "[EOS]", "<|im_user|>", "<|im_end|>"],
  },
  {
    name: "afmoe",
    model: "gpt2",
    pre: "afmoe",
    families: "Arcee AFMoE / Trinity (digits in threes from the right, Asian scripts apart)",
    control: ["<|begin_of_text|>", "<|end_of_text|>"],
  },
  {
    name: "tiny_aya",
    model: "gpt2",
    pre: "tiny_aya",
    families: "Cohere Tiny Aya, Command A MoE (as cohere2moe)",
    control: ["<BOS_TOKEN>", "<EOS_TOKEN>"],
  },
  {
    name: "superbpe",
    model: "gpt2",
    pre: "superbpe",
    families: "OLMo 2 SuperBPE (digits in threes from the right, no other split)",
    control: ["<|endoftext|>"],
  },
  {
    name: "spark2_5",
    model: "gpt2",
    pre: "spark2_5",
    families: "Spark X2.5",
    control: ["<|endoftext|>", "<|im_start|>"],
  },
  {
    name: "jais-2",
    model: "gpt2",
    pre: "jais-2",
    families: "Jais 2 (whitespace runs in powers of two)",
    control: ["<|endoftext|>"],
  },
  {
    name: "bloom",
    model: "gpt2",
    pre: "bloom",
    families: "BLOOM, Poro (as poro-chat), GPT-3 Finnish",
    control: ["<s>", "</s>", "<pad>"],
  },
  {
    name: "laguna",
    model: "gpt2",
    pre: "laguna",
    families: "Laguna (lines, then Qwen2's split)",
    control: CHATML,
  },
];

if (import.meta.main) {
  const { flags } = runCli({
    name: "tokenizer_corpus",
    command: "deno run -A bench/peers/tokenizer_corpus.ts",
    about: "Writes test/fixtures/tokenizers/: synthetic GGUF vocabularies and llama.cpp's ids.",
    flags: {
      out: {
        type: "string",
        arg: "DIR",
        default: new URL("../../test/fixtures/tokenizers/", import.meta.url).pathname,
        help: "the folder to write (one .gguf per type, expected.json, manifest.json)",
      },
    },
  });
  const out = flags.out.endsWith("/") ? flags.out : `${flags.out}/`;
  await Deno.mkdir(out, { recursive: true });
  const errors: string[] = [];
  const llama = await openLlamaTokenizers((level, line) => {
    if (level >= 3) errors.push(line.trim());
  });
  // Special-token text is left out of training, so that no learned token spells one (llama.cpp
  // makes a normal token that reads `<|endoftext|>` or `<|end|>` a control token).
  const specials = [
    ...new Set(SPECS.flatMap((s) => [...s.control, ...s.userDefined ?? []])),
  ];
  const training = CORPUS.map((line) => specials.reduce((l, s) => l.replaceAll(s, " "), line));
  const expected: Record<string, unknown> = {};
  const types: Record<string, unknown>[] = [];
  for (const spec of SPECS) {
    const meta = spec.model === "llama"
      ? spmVocab(spec, training)
      : spec.model === "gemma4" || spec.pre === "sarvam-moe"
      ? metaVocab(spec, training)
      : bpeVocab(spec, training);
    const bytes = await encodeGguf(meta, []);
    const file = `${spec.name}.gguf`;
    await Deno.writeFile(`${out}${file}`, bytes);
    const vocab = llama.open(`${out}${file}`);
    expected[spec.name] = CORPUS.map((text) => {
      const ids = vocab.tokenize(text, true, true);
      const bare = vocab.tokenize(text, false, true);
      const plain = vocab.tokenize(text, false, false);
      const same = plain.length === bare.length && plain.every((id, i) => id === bare[i]);
      const detokenized = vocab.detokenize(bare, false, true);
      return {
        ids,
        ...(same ? {} : { plain }),
        ...(detokenized === text ? {} : { detokenized }),
      };
    });
    vocab.close();
    types.push({
      name: spec.name,
      file,
      bytes: bytes.length,
      model: spec.model,
      pre: spec.pre ?? null,
      add_bos: vocab.addBos,
      add_eos: vocab.addEos,
      families: spec.families,
    });
    console.error(`${spec.name}: ${bytes.length} bytes`);
  }
  llama.close();
  await Deno.writeTextFile(
    `${out}expected.json`,
    JSON.stringify({ corpus: CORPUS, expected }) + "\n",
  );
  await Deno.writeTextFile(
    `${out}manifest.json`,
    JSON.stringify(
      {
        generated_by: "bench/peers/tokenizer_corpus.ts",
        llama_cpp: llama.version,
        lines: CORPUS.length,
        types,
        llama_cpp_warnings: [...new Set(errors)],
      },
      null,
      2,
    ) + "\n",
  );
}
