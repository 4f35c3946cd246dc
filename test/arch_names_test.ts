/**
 * Families live in `src/model/arch/` only: no other source file under src/ names one (any name a
 * registered description answers to, as a string literal) or compares an `arch` with a literal.
 * Tests and test-only helpers (`*_test.ts`, `test_*.ts`) may name families to build models.
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import { ARCHS } from "../src/model/arch/mod.ts";

const SRC = new URL("../src/", import.meta.url);
const ARCH_DIR = "model/arch/";

/**
 * Literals that are not families where they stand: GGUF tokenizer vocabulary names
 * (`tokenizer.ggml.model = "llama"`, the SentencePiece-style model; `tokenizer.ggml.pre =
 * "qwen2"`, a pre-tokenizer regex), which share spellings with architectures; and
 * `general.name` matched as llama.cpp matches it (tokenizer.ts: Phi-3's added tokens eat the
 * whitespace after them when the file's name says "phi3").
 */
const ALLOWED: Record<string, readonly string[]> = {
  "text/gguf/tokenizer.ts": ["llama", "qwen2", "phi3"],
  "convert/tokenizer_meta.ts": ["llama", "qwen2"],
  // `tokenizer.ggml.pre` names that are also family names (LFM2's vocabulary is "lfm2", Qwen3.5's "qwen35").
  "text/gguf/pretokenizers.ts": ["qwen2", "lfm2", "qwen35"],
};

/** Every name a family answers to: its own, HF's and GGUF's. */
function familyNames(): Set<string> {
  const out = new Set<string>();
  for (const a of ARCHS.values()) {
    for (
      const n of [
        a.name,
        ...a.hf.architectures,
        ...a.hf.modelTypes,
        ...a.gguf.architectures,
        a.gguf.write,
      ]
    ) out.add(n);
  }
  return out;
}

/** `text` less its comments (block comments, and `//` ones that start a line or follow a space). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|\s)\/\/.*$/gm, "$1");
}

/** The family names `text` spells as string literals, and its comparisons of `arch` with one. */
function familyMentions(text: string, names: ReadonlySet<string>): string[] {
  const found: string[] = [];
  const src = code(text);
  for (const m of src.matchAll(/(["'`])([A-Za-z0-9_.-]+)\1/g)) {
    if (names.has(m[2]!)) found.push(m[2]!);
  }
  const compare = /\barch\s*[!=]==?\s*["'`]|["'`]\s*[!=]==?\s*[\w.]*\barch\b/g;
  for (const m of src.matchAll(compare)) found.push(m[0]);
  return found;
}

async function sources(dir: URL, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const path = `${prefix}${e.name}`;
    if (e.isDirectory) out.push(...await sources(new URL(`${e.name}/`, dir), `${path}/`));
    else if (/\.ts$/.test(e.name) && !/_test\.ts$|(^|\/)test_[^/]*\.ts$/.test(path)) {
      out.push(path);
    }
  }
  return out.sort();
}

Deno.test("the scan finds a family literal and an arch comparison, not a comment", () => {
  const names = new Set(["fam", "FamForCausalLM"]);
  deepStrictEqual(
    familyMentions(
      [
        `const a = "fam"; // "fam" in a comment`,
        `/** "FamForCausalLM" documented */`,
        `if (config.arch !== 'other') x = \`FamForCausalLM\`;`,
        `const url = "https://fam"; const b = "family";`,
      ].join("\n"),
      names,
    ),
    ["fam", "FamForCausalLM", "arch !== '"],
  );
});

Deno.test("no source file outside src/model/arch names a model family", async () => {
  const names = familyNames();
  ok(names.size >= ARCHS.size && ARCHS.size >= 3, "the registry lists the families");
  const files = await sources(SRC);
  ok(files.includes("runtime/step_plan.ts") && !files.some((f) => f.endsWith("_test.ts")));
  const offenders: string[] = [];
  for (const file of files) {
    if (file.startsWith(ARCH_DIR)) continue;
    const allowed = new Set(ALLOWED[file] ?? []);
    const text = await Deno.readTextFile(new URL(file, SRC));
    for (const m of familyMentions(text, names)) {
      if (!allowed.has(m)) offenders.push(`src/${file}: ${m}`);
    }
  }
  deepStrictEqual(offenders, []);
});
