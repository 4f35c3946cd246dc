import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { encodeChat } from "../load.ts";
import { GgufMetadata } from "../../formats/gguf/metadata.ts";
import { T, typed, type Value } from "../../formats/gguf/test_encoder.ts";
import { SPM_PIECES, spmVocab } from "../../model/gguf/test_model.ts";
import { ggufText } from "./tokenizer.ts";

/** Metadata as the parser gives it (the test encoder's typed values unwrapped). */
function meta(kv: Record<string, Value>): GgufMetadata {
  const raw: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(kv)) {
    raw[k] = typeof v === "object" && !Array.isArray(v) ? v.value : v;
  }
  return new GgufMetadata(raw, "t.gguf");
}

const SPM_BASE = 3 + 256;
const spmId = (piece: string) => SPM_BASE + SPM_PIECES.indexOf(piece);

Deno.test("llama (SentencePiece) vocabulary: ▁ prefix, merges by score, byte fallback, BOS", () => {
  const { tokenizer } = ggufText(meta(spmVocab()), [2]);
  deepStrictEqual(tokenizer.encode("hello world"), [1, spmId("▁hello"), spmId("▁world")]);
  equal(
    tokenizer.decode([1, spmId("▁hello"), spmId("▁world")], { skipSpecial: true }),
    "hello world",
  );
  // "i" is not a piece: its byte <0x69>; the newline is <0x0A>.
  const ids = tokenizer.encode("hi\n");
  deepStrictEqual(ids, [1, spmId("▁"), spmId("h"), 3 + 0x69, 3 + 0x0a]);
  equal(tokenizer.decode(ids, { skipSpecial: true }), "hi\n");
  equal(tokenizer.bosTokenId, 1);
  deepStrictEqual(tokenizer.eosTokenIds, [2]);
  ok(tokenizer.isSpecial(2));
  const text = "hello wörld\nhe said: «llo»";
  equal(tokenizer.decode(tokenizer.encode(text), { skipSpecial: true }), text);
  deepStrictEqual(tokenizer.encode("hello", { addSpecial: false }), [spmId("▁hello")]);
});

function gpt2(merges: string[], extra: Record<string, Value> = {}): GgufMetadata {
  const chars = [];
  for (let c = 0x21; c <= 0x7e; c++) chars.push(String.fromCharCode(c));
  chars.push("Ġ", "Ċ");
  const merged = merges.map((m) => m.replace(" ", ""));
  const tokens = [...chars, ...merged, "<|endoftext|>", "<|im_start|>", "<|im_end|>"];
  const types = tokens.map((t) => t.startsWith("<|") ? 3 : 1);
  return meta({
    "tokenizer.ggml.model": "gpt2",
    "tokenizer.ggml.pre": "qwen2",
    "tokenizer.ggml.tokens": tokens,
    "tokenizer.ggml.token_type": typed(T.ARRAY, types, T.I32),
    "tokenizer.ggml.merges": merges,
    "tokenizer.ggml.eos_token_id": tokens.indexOf("<|im_end|>"),
    "tokenizer.ggml.bos_token_id": tokens.indexOf("<|endoftext|>"),
    "tokenizer.ggml.add_bos_token": false,
    "tokenizer.chat_template":
      "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}" +
      "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
    ...extra,
  });
}

const MERGES = ["h e", "l l", "ll o", "he llo", "Ġ w", "o r", "Ġw or", "l d", "Ġwor ld"];

Deno.test("gpt2 (byte-level BPE) vocabulary: merges in rank order, special tokens, chat template", () => {
  const m = gpt2(MERGES);
  const tokens = m.strings("tokenizer.ggml.tokens");
  const id = (t: string) => tokens.indexOf(t);
  const text = ggufText(m, [id("<|im_end|>")]);
  const { tokenizer } = text;
  deepStrictEqual(tokenizer.encode("hello world"), [id("hello"), id("Ġworld")]);
  equal(tokenizer.decode([id("hello"), id("Ġworld")]), "hello world");
  const s = "hello  world\n\nhe<|im_end|>";
  const ids = tokenizer.encode(s);
  ok(ids.includes(id("<|im_end|>")), "a control token is one id");
  equal(tokenizer.decode(ids), s);
  ok(tokenizer.isSpecial(id("<|im_start|>")));
  const chat = encodeChat(text, [{ role: "user", content: "hello" }]);
  deepStrictEqual(chat.slice(0, 2), [id("<|im_start|>"), id("u")]);
  ok(chat.includes(id("hello")));

  // Rank order decides: with "e l" ranked first, "hello" can no longer become he + llo.
  const reordered = gpt2(["e l", ...MERGES]);
  const t2 = reordered.strings("tokenizer.ggml.tokens");
  deepStrictEqual(
    ggufText(reordered).tokenizer.encode("hello"),
    ["h", "el", "l", "o"].map((t) => t2.indexOf(t)),
  );
});

Deno.test("bad tokenizer metadata is refused naming the key", () => {
  const bad = (kv: Record<string, Value>, key: string) =>
    throws(() => ggufText(meta({ ...spmVocab(), ...kv })), (e: unknown) => {
      ok(e instanceof EngineError && e.type === "InvalidArgument", String(e));
      ok(e.message.includes(key), `${e.message} should name ${key}`);
      return true;
    });
  bad({ "tokenizer.ggml.model": "bert" }, "tokenizer.ggml.model");
  bad({ "tokenizer.ggml.bos_token_id": 100000 }, "tokenizer.ggml.bos_token_id");
  bad({ "tokenizer.ggml.scores": [1, 2] }, "tokenizer.ggml.scores");
  bad({ "tokenizer.ggml.tokens": "abc" }, "tokenizer.ggml.tokens");
  bad({ "tokenizer.ggml.add_bos_token": 1 }, "tokenizer.ggml.add_bos_token");
  bad({ "tokenizer.chat_template": "{% for %}" }, "chat template");
  throws(
    () => ggufText(gpt2(MERGES, { "tokenizer.ggml.pre": "no-such-split" })),
    (e) =>
      e instanceof EngineError && e.type === "InvalidArgument" &&
      /tokenizer\.ggml\.pre: unsupported pre-tokenizer "no-such-split"/.test(e.message),
  );
});
