/**
 * Fuzzed tokenizer files, tokenizer configs and chat templates give `InvalidArgument` (or
 * `ResourceExhausted` past a chat template's budget) only; `@huggingface/tokenizers` and
 * `@huggingface/jinja` errors only of the classes their corpora stand for.
 */
import { blobSource, type ModelFiles } from "../../src/formats/source.ts";
import { encodeChat, loadText } from "../../src/text/load.ts";
import { mutateBytes, mutateJson } from "./fuzz.ts";
import { fuzz } from "./harness.ts";

const TOKENIZER = {
  version: "1.0",
  normalizer: null,
  pre_tokenizer: { type: "Whitespace" },
  post_processor: null,
  decoder: null,
  added_tokens: [
    { id: 3, content: "<s>", special: true },
    { id: 4, content: "</s>", special: true },
  ],
  model: {
    type: "BPE",
    vocab: { a: 0, b: 1, ab: 2, "[UNK]": 5 },
    merges: ["a b"],
    unk_token: "[UNK]",
  },
};
const UNIGRAM = {
  ...TOKENIZER,
  model: { type: "Unigram", vocab: [["a", -1], ["b", -1], ["ab", -0.5], ["<unk>", 0]], unk_id: 3 },
};
const BYTES = { type: "bytes", vocab_size: 259, bos_token_id: 256, eos_token_id: 257 };
const CONFIG = {
  bos_token: "<s>",
  eos_token: { content: "</s>" },
  chat_template: [
    {
      name: "default",
      template: "{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n" +
        "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}",
    },
  ],
};
const GENERATION = { eos_token_id: [4] };
const EXTRA = ["<s>", "</s>", 3, 4, "BPE", "Unigram", "WordPiece", "{{ x }}", "{% for %}"];
const encode = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

function files(entries: Record<string, Uint8Array<ArrayBuffer>>): ModelFiles {
  return {
    location: "fuzz/",
    open: (name) =>
      Promise.resolve(
        Object.hasOwn(entries, name) ? blobSource(new Blob([entries[name]!]), name) : undefined,
      ),
  };
}

type Files = Record<string, Uint8Array<ArrayBuffer>>;

/** Three files, one of them mutated. */
function tokenizerFiles(r: () => number): Files {
  const base = [TOKENIZER, UNIGRAM, BYTES][Math.floor(r() * 3)]!;
  const entries: Files = {
    "tokenizer.json": encode(base),
    "tokenizer_config.json": encode(CONFIG),
    "generation_config.json": encode(GENERATION),
  };
  const names = Object.keys(entries);
  const target = names[Math.floor(r() * names.length)]!;
  const original = { "tokenizer.json": base, "tokenizer_config.json": CONFIG }[target] ??
    GENERATION;
  entries[target] = r() < 0.3
    ? mutateBytes(entries[target]!, r)
    : encode(mutateJson(original, r, EXTRA));
  return entries;
}

Deno.test("fuzzed tokenizer files and configs: loadText, encode, decode, chat refuse with InvalidArgument", async () => {
  await fuzz({
    name: "tokenizer files",
    corpus: "tokenizer_files",
    expect: ["InvalidArgument", "ResourceExhausted"],
    hangMs: 3000,
    generate: tokenizerFiles,
    run: async (entries: Files) => {
      const text = await loadText(files(entries));
      for (const s of ["ab ba", "", "a\u0000b 🙂"]) {
        const ids = text.tokenizer.encode(s);
        text.tokenizer.decode(ids);
        text.tokenizer.decode(ids, { skipSpecial: true });
      }
      text.chat.budget.maxSteps = 20_000;
      text.chat.budget.timeoutMs = 500;
      encodeChat(text, [{ role: "user", content: "ab" }, { role: "assistant", content: "b" }]);
    },
  });
});

const SNIPPETS = [
  "{% for i in range(99999999) %}x{% endfor %}",
  "{{ 'a' | indent(999999999) }}",
  "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
  '{% set ns = namespace(s="ab") %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}',
  "{% for m in messages %}{% for n in messages %}{{ n.content }}{% endfor %}{% endfor %}",
  "{{ messages | tojson(indent=99999999) }}",
  "{{ raise_exception('bad') }}",
  "{{ strftime_now(5) }}",
  "{{ range(1, 2, 0) }}",
  "{{ messages[0].content * 3 }}",
  "{% if %}",
  "{{ x.y.z() }}",
];

const TEMPLATE = CONFIG.chat_template[0]!.template;

/** The template with bytes mutated, a hostile snippet spliced in, or both. */
function template(r: () => number): string {
  let source = r() < 0.5
    ? new TextDecoder().decode(mutateBytes(new TextEncoder().encode(TEMPLATE), r))
    : TEMPLATE;
  if (r() < 0.6) {
    const at = Math.floor(r() * source.length);
    const snippet = SNIPPETS[Math.floor(r() * SNIPPETS.length)]!;
    source = source.slice(0, at) + snippet + source.slice(at);
  }
  return source;
}

Deno.test("fuzzed chat templates: rendering gives a string, InvalidArgument or ResourceExhausted", async () => {
  await fuzz({
    name: "chat template",
    corpus: "chat_template",
    expect: ["InvalidArgument", "ResourceExhausted"],
    hangMs: 1500,
    generate: template,
    run: async (source: string) => {
      const text = await loadText(files({
        "tokenizer.json": encode(TOKENIZER),
        "tokenizer_config.json": encode({ ...CONFIG, chat_template: source }),
      }));
      text.chat.budget.timeoutMs = 300;
      encodeChat(text, [{ role: "user", content: "ab" }]);
    },
  });
});
