/**
 * vLLM's `/tokenize` and `/detokenize` bodies: a prompt's ids as completions encode it, messages'
 * ids as chat completions render them (tools and template variables included), token strings on
 * request, ids back to text; every field Kiln does not honour, and every bad value, refused by
 * name.
 */
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import { specFiles } from "../adapters/deno/file_source.ts";
import { EngineError } from "../contract/errors.ts";
import { ChatTemplate } from "../text/chat.ts";
import { loadText, type ModelText } from "../text/load.ts";
import { parseJob } from "./requests.ts";
import { detokenize, tokenize } from "./tokenize.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;
const QWEN3 = new URL("../../test/fixtures/chat_templates/Qwen-Qwen3-0.6B.jinja", import.meta.url);
const fortune = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" }));
const tok = fortune.tokenizer;
/** Fortune's tokenizer under Qwen3's template (which renders `tools` and `enable_thinking`). */
const qwen: ModelText = { tokenizer: tok, chat: new ChatTemplate(Deno.readTextFileSync(QWEN3)) };
/** Fortune's tokenizer under the plain default template. */
const plain: ModelText = { tokenizer: tok, chat: ChatTemplate.fromConfig({}) };
const messages = [{ role: "user", content: "Weather in Zürich?" }];
const limits = { maxN: 8, contextLength: 4096, maxLogprobs: 20 };
/** The prompt ids a chat completion of `body` runs. */
const chatIds = (text: ModelText, body: Record<string, unknown> = {}) =>
  parseJob({ model: "m", messages, ...body }, true, text, limits).prompt;

const refused = (run: () => unknown, param: string, says?: RegExp) =>
  throws(run, (e: unknown) => {
    ok(e instanceof EngineError, String(e));
    strictEqual(e.type, "InvalidArgument");
    strictEqual(e.param, param, e.message);
    ok(says === undefined || says.test(e.message), e.message);
    return true;
  });

Deno.test("a prompt: its ids as completions encode it, specials on request, token strings", () => {
  const r = tokenize({ model: "m", prompt: "Hé" }, plain, 1024);
  deepStrictEqual(r, {
    count: 4,
    max_model_len: 1024,
    tokens: [tok.bosTokenId!, 72, 0xc3, 0xa9],
    token_strs: null,
  });
  deepStrictEqual(
    parseJob({ model: "m", prompt: "Hé" }, false, plain, limits).prompt,
    r.tokens,
    "the ids a completion of the prompt runs",
  );
  const bare = tokenize(
    { prompt: "Hé", add_special_tokens: false, return_token_strs: true },
    plain,
    undefined,
  );
  deepStrictEqual(bare.tokens, [72, 0xc3, 0xa9]);
  // A byte of a multi-byte character is labelled as completions' logprobs label it.
  deepStrictEqual(bare.token_strs, ["H", "bytes:\\xc3", "bytes:\\xa9"]);
  strictEqual(bare.max_model_len, null);
});

Deno.test("messages: the ids a chat completion runs, with tools and template variables", () => {
  for (const text of [plain, qwen]) {
    deepStrictEqual(tokenize({ messages }, text, 4096).tokens, chatIds(text));
  }
  const open = tokenize({ messages, add_generation_prompt: false }, qwen, 4096).tokens;
  ok(open.length < chatIds(qwen).length, "no assistant header");
  const tool = { type: "function", function: { name: "get_weather", parameters: {} } };
  const withTools = tokenize({ messages, tools: [tool] }, qwen, 4096).tokens;
  deepStrictEqual(withTools, chatIds(qwen, { tools: [tool] }));
  ok(tok.decode(withTools).includes("get_weather"));
  deepStrictEqual(tokenize({ messages, tools: [] }, qwen, 4096).tokens, chatIds(qwen));
  const thinking = (on: boolean) =>
    tok.decode(
      tokenize({ messages, chat_template_kwargs: { enable_thinking: on } }, qwen, 4096).tokens,
    );
  ok(thinking(false).includes("<think>") && !thinking(true).includes("<think>"));
  const withBos = tokenize({ messages, add_special_tokens: true }, qwen, 4096).tokens;
  deepStrictEqual(withBos, [tok.bosTokenId!, ...chatIds(qwen)]);
});

Deno.test("/tokenize refuses by name what it does not honour and bad values", () => {
  const t = (body: unknown) => () => tokenize(body, qwen, 4096);
  refused(t({ prompt: "x", messages }), "prompt", /unsupported field for \/tokenize with messages/);
  refused(t({ prompt: "x", add_generation_prompt: true }), "add_generation_prompt");
  refused(t({ prompt: "x", frobnicate: 1 }), "frobnicate");
  refused(t({ messages, chat_template: "{{ 1 }}" }), "chat_template", /model's is/);
  refused(t({ messages, continue_final_message: true }), "continue_final_message");
  tokenize({ messages, continue_final_message: false }, qwen, 4096);
  refused(t({ prompt: ["x"] }), "prompt", /expected a string/);
  refused(t({}), "prompt");
  refused(t({ prompt: "x", add_special_tokens: "yes" }), "add_special_tokens");
  refused(t({ prompt: "x", return_token_strs: 1 }), "return_token_strs");
  refused(t({ messages: "Hi" }), "messages");
  refused(t({ messages, tools: [{ type: "function" }] }), "tools");
  refused(t({ messages, chat_template_kwargs: [1] }), "chat_template_kwargs");
  refused(t({ messages, chat_template_kwargs: { messages: [] } }), "chat_template_kwargs");
  throws(t([1]), /the body must be a JSON object/);
});

Deno.test("/detokenize: ids to text, specials kept; ids out of the vocabulary named", () => {
  const ids = tokenize({ prompt: "Hé" }, plain, 1024).tokens;
  deepStrictEqual(detokenize({ model: "m", tokens: ids }, plain), { prompt: "<bos>Hé" });
  deepStrictEqual(detokenize({ tokens: [] }, plain), { prompt: "" });
  const d = (body: unknown) => () => detokenize(body, plain);
  refused(d({ tokens: [72, 260] }), "tokens", /^tokens\[1\]: expected a token id from 0 to 259/);
  refused(d({ tokens: [72, -1] }), "tokens", /^tokens\[1\]/);
  refused(d({ tokens: ["H"] }), "tokens", /^tokens\[0\]/);
  refused(d({ tokens: "72" }), "tokens", /expected an array of token ids/);
  refused(d({ tokens: [72], prompt: "x" }), "prompt", /unsupported field for \/detokenize/);
});
