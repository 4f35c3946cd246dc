/**
 * Writes `test/fixtures/tokenizers/`: for each tokenizer type the popular model families use, a
 * small synthetic GGUF vocabulary (`tokenizer_vocabs.ts`) and llama.cpp's own tokenization of a
 * fixed multilingual corpus with it (`llama_vocab.ts`: `llama_tokenize` on node-llama-cpp's
 * libllama), the ground truth `src/text/gguf/tokenizer_llamacpp_test.ts` holds Kiln to.
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
import { encodeGguf } from "../../src/convert/writer.ts";
import { openLlamaTokenizers } from "./llama_vocab.ts";
import { SPECS } from "./tokenizer_types.ts";
import { bpeVocab, metaVocab, spmVocab } from "./tokenizer_vocabs.ts";

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
