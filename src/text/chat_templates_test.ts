/**
 * Each family's own chat template (the models' `tokenizer.chat_template`, as llama.cpp carries
 * them) rendered by Kiln must equal jinja2's render, which Hugging Face transformers uses: the
 * strings in `test/fixtures/chat_templates/expected.json`, written by
 * `tools/fixtures/chat_templates.py` (see the folder's README). Then the same template read from a
 * GGUF's metadata, through `encodeChat` (what serve's chat completions use).
 */
import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { sha256 } from "@noble/hashes/sha2.js";
import { EngineError } from "../contract/errors.ts";
import { GgufMetadata } from "../formats/gguf/metadata.ts";
import { ggufText } from "./gguf/tokenizer.ts";
import { type ChatMessage, type ChatRenderOptions, ChatTemplate } from "./chat.ts";
import { encodeChat } from "./load.ts";

const DIR = new URL("../../test/fixtures/chat_templates/", import.meta.url);

interface Case {
  name: string;
  messages: ChatMessage[];
  add_generation_prompt: boolean;
  tools?: Record<string, unknown>[];
  variables?: Record<string, unknown>;
  output?: string;
  error?: string;
}

interface Family {
  template: string;
  sha256: string;
  special_tokens: Record<string, string>;
  cases: Case[];
}

const expected = JSON.parse(await Deno.readTextFile(new URL("expected.json", DIR))) as {
  now: string;
  strftime: { now: string; format: string; output: string }[];
  families: Record<string, Family>;
};
const NOW = new Date(expected.now);

const hex = (bytes: Uint8Array) => [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");

function options(c: Case): ChatRenderOptions {
  return {
    addGenerationPrompt: c.add_generation_prompt,
    now: () => NOW,
    ...(c.tools === undefined ? {} : { tools: c.tools }),
    ...(c.variables === undefined ? {} : { variables: c.variables }),
  };
}

for (const [family, f] of Object.entries(expected.families)) {
  Deno.test(`chat template of ${family} (${f.template}) renders as jinja2 does`, async () => {
    const bytes = await Deno.readFile(new URL(f.template, DIR));
    equal(hex(sha256(bytes)), f.sha256, `${f.template} is the file the fixtures were made from`);
    const chat = ChatTemplate.fromConfig({ chat_template: new TextDecoder().decode(bytes) });
    ok(!chat.isDefault);
    for (const c of f.cases) {
      const render = () => chat.render(c.messages, f.special_tokens, options(c));
      if (c.error !== undefined) {
        throws(render, (e: unknown) => {
          ok(e instanceof EngineError && e.type === "InvalidArgument", `${c.name}: ${e}`);
          ok(e.message.includes(c.error!), `${c.name}: ${e.message} should say ${c.error}`);
          return true;
        });
      } else {
        equal(render(), c.output, `${family}: ${c.name}`);
      }
    }
  });
}

Deno.test("strftime_now formats the render's clock as Python's strftime does", () => {
  for (const { now, format, output } of expected.strftime) {
    const template = new ChatTemplate(`{{ strftime_now(${JSON.stringify(format)}) }}`);
    // An ISO date-time without a zone is local time, as Python's naive datetime is.
    equal(template.render([], {}, { now: () => new Date(now) }), output, `${now} ${format}`);
  }
});

/**
 * A Llama 3 GGUF's tokenizer (byte-level BPE, no merges: one token per byte symbol) with the
 * control tokens its template writes, `add_bos_token` set as real Llama 3 files have it, and the
 * real Llama 3.1 template as `tokenizer.chat_template`.
 */
function llama3Gguf(template: string, addEos: boolean): GgufMetadata {
  const symbols = [];
  for (let c = 0x21; c <= 0x7e; c++) symbols.push(String.fromCharCode(c));
  const control = ["<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>"];
  const tokens = [...symbols, "Ġ", "Ċ", ...control];
  return new GgufMetadata({
    "tokenizer.ggml.model": "gpt2",
    "tokenizer.ggml.pre": "llama-bpe",
    "tokenizer.ggml.tokens": tokens,
    "tokenizer.ggml.token_type": tokens.map((t) => control.includes(t) ? 3 : 1),
    "tokenizer.ggml.merges": [],
    "tokenizer.ggml.bos_token_id": tokens.indexOf("<|begin_of_text|>"),
    "tokenizer.ggml.eos_token_id": tokens.indexOf("<|eot_id|>"),
    "tokenizer.ggml.add_bos_token": true,
    "tokenizer.ggml.add_eos_token": addEos,
    "tokenizer.chat_template": template,
  }, "llama3.gguf");
}

Deno.test("a GGUF's tokenizer.chat_template is the prompt; its BOS is not doubled", async () => {
  const f = expected.families.llama!;
  const template = await Deno.readTextFile(new URL(f.template, DIR));
  for (const addEos of [false, true]) {
    const text = ggufText(llama3Gguf(template, addEos));
    ok(!text.chat.isDefault);
    equal(text.chat.source, template);
    const bos = text.tokenizer.bosTokenId!;
    equal(text.tokenizer.specialTokens.bos_token, "<|begin_of_text|>");
    for (const name of ["system_user", "multi_turn_no_generation_prompt"]) {
      const c = f.cases.find((x) => x.name === name)!;
      const ids = encodeChat(text, c.messages, { addGenerationPrompt: c.add_generation_prompt });
      // The template writes the BOS; the tokenizer's add_bos/add_eos must add nothing more.
      equal(ids[0], bos, name);
      equal(ids.filter((id) => id === bos).length, 1, `${name}: one BOS`);
      equal(text.tokenizer.decode(ids, { skipSpecial: false }), c.output, name);
      // What encodeChat avoids: the same text encoded with the special tokens added.
      const doubled = text.tokenizer.encode(c.output!);
      deepStrictEqual(doubled.slice(0, 2), [bos, bos], `${name}: add_bos_token is set`);
    }
  }
});
