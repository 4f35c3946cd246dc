/**
 * The request side of reasoning, with real templates and an engine whose reply the test writes:
 * `chat_template_kwargs` reach the template (Qwen3's `enable_thinking: false` renders an empty
 * block, and the reply is then all content), `reasoning_effort` reaches gpt-oss's template and is
 * refused by name where the template does not read it, bad values are refused by name, gpt-oss's
 * channels are read whole and streamed, an assistant's reasoning sent back reaches the template,
 * and special tokens stay in the text a reasoning convention reads.
 */
import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { specFiles } from "../adapters/deno/file_source.ts";
import { EngineError } from "../contract/errors.ts";
import { ChatTemplate } from "../text/chat.ts";
import { loadText, type ModelText } from "../text/load.ts";
import { gpt2Json } from "../text/test_tokenizers.ts";
import { parseTokenizer } from "../text/tokenizer.ts";
import { ScriptedEngine } from "../../test/support/scripted_engine.ts";
import {
  type ChatCompletionChunk,
  type ChatCompletionRequest,
  ChatCompletions,
} from "./completions.ts";
import { parseJob } from "./requests.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;
const fortune = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" }));
const text = (name: string): ModelText => ({
  tokenizer: fortune.tokenizer,
  chat: new ChatTemplate(
    Deno.readTextFileSync(
      new URL(`../../test/fixtures/chat_templates/${name}.jinja`, import.meta.url),
    ),
  ),
});
const QWEN3 = text("Qwen-Qwen3-0.6B"), GPT_OSS = text("openai-gpt-oss-120b");

function target(t: ModelText) {
  const engine = new ScriptedEngine("m", t.tokenizer);
  return {
    engine,
    chat: new ChatCompletions({ engine, text: t, model: "m", contextLength: 8192 }),
  };
}

/** The prompt the engine got, as text. */
const promptOf = (engine: ScriptedEngine, i = 0) =>
  fortune.tokenizer.decode(engine.requests[i]!.token_ids, { skipSpecial: false });

const body = { messages: [{ role: "user", content: "2 + 2?" }] } satisfies ChatCompletionRequest;

Deno.test("reasoning: enable_thinking false renders Qwen3's empty block; the reply is content", async () => {
  const t = target(QWEN3);
  t.engine.reply = "<think>not a block</think> 4";
  const r = await t.chat.create({ ...body, chat_template_kwargs: { enable_thinking: false } });
  ok(promptOf(t.engine).endsWith("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  deepStrictEqual(r.choices[0]!.message, {
    role: "assistant",
    content: "<think>not a block</think> 4",
  });
  deepStrictEqual(r.usage.completion_tokens_details, { reasoning_tokens: 0 });
  await t.chat.create(body);
  ok(promptOf(t.engine, 1).endsWith("<|im_start|>assistant\n"), "thinking on by default");
});

const HARMONY = "<|channel|>analysis<|message|>Simple sum. 4.<|end|>" +
  "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.";

Deno.test("reasoning (gpt-oss): analysis is reasoning, final is content, whole and streamed", async () => {
  const t = target(GPT_OSS);
  t.engine.reply = HARMONY;
  const r = await t.chat.create(body);
  deepStrictEqual(r.choices[0]!.message, {
    role: "assistant",
    content: "2 + 2 = 4.",
    reasoning_content: "Simple sum. 4.",
    reasoning: "Simple sum. 4.",
  });
  const analysis = "<|channel|>analysis<|message|>Simple sum. 4.<|end|>";
  deepStrictEqual(r.usage.completion_tokens_details, {
    reasoning_tokens: fortune.tokenizer.encode(analysis, { addSpecial: false }).length,
  });
  const chunks: ChatCompletionChunk[] = [];
  for await (const c of await t.chat.create({ ...body, stream: true })) chunks.push(c);
  const deltas = chunks.map((c) => c.choices[0]!.delta);
  equal(deltas.map((d) => d.reasoning_content ?? "").join(""), "Simple sum. 4.");
  equal(deltas.map((d) => d.content ?? "").join(""), "2 + 2 = 4.");
  ok(deltas.every((d) => !`${d.content ?? ""}${d.reasoning ?? ""}`.includes("<|")));
});

Deno.test("reasoning_effort reaches gpt-oss's template; chat_template_kwargs too", async () => {
  const t = target(GPT_OSS);
  t.engine.reply = HARMONY;
  await t.chat.create(body);
  ok(promptOf(t.engine, 0).includes("Reasoning: medium"), "the template's default");
  await t.chat.create({ ...body, reasoning_effort: "high" });
  ok(promptOf(t.engine, 1).includes("Reasoning: high"));
  await t.chat.create({ ...body, chat_template_kwargs: { reasoning_effort: "low" } });
  ok(promptOf(t.engine, 2).includes("Reasoning: low"));
  await t.chat.create({ ...body, chat_template_kwargs: { model_identity: "You are Kiln." } });
  ok(promptOf(t.engine, 3).includes("You are Kiln.\n"));
});

/** An `InvalidArgument` naming `param`, with `words` in its message. */
const refused = (param: string, words: string) => (e: unknown) =>
  e instanceof EngineError && e.type === "InvalidArgument" && e.param === param &&
  e.message.includes(words);

Deno.test("reasoning: bad reasoning_effort and chat_template_kwargs are refused by name", async () => {
  const qwen = target(QWEN3), oss = target(GPT_OSS);
  const ask = (t: ReturnType<typeof target>, extra: Record<string, unknown>) =>
    t.chat.create({ ...body, ...extra } as ChatCompletionRequest & { stream?: false });
  await rejects(
    ask(qwen, { reasoning_effort: "high" }),
    refused("reasoning_effort", "no reasoning effort"),
  );
  await rejects(ask(oss, { reasoning_effort: "max" }), refused("reasoning_effort", '"low"'));
  await rejects(ask(oss, { reasoning_effort: 2 }), refused("reasoning_effort", "got 2"));
  await rejects(
    ask(qwen, { chat_template_kwargs: "x" }),
    refused("chat_template_kwargs", "object"),
  );
  await rejects(
    ask(qwen, { chat_template_kwargs: [1] }),
    refused("chat_template_kwargs", "object"),
  );
  await rejects(
    ask(qwen, { chat_template_kwargs: { messages: [] } }),
    refused("chat_template_kwargs", "messages"),
  );
  // `null` is absent, as OpenAI reads it.
  await ask(qwen, { reasoning_effort: null, chat_template_kwargs: null });
  equal(qwen.engine.requests.length, 1);
  equal(oss.engine.requests.length, 0);
});

Deno.test("reasoning: an assistant's reasoning sent back reaches the template", async () => {
  const t = target(QWEN3);
  t.engine.reply = "Done.";
  const call = { id: "c1", type: "function", function: { name: "f", arguments: "{}" } };
  await t.chat.create({
    messages: [
      { role: "user", content: "Call f." },
      {
        role: "assistant",
        content: null,
        reasoning_content: "I should call f.",
        tool_calls: [call],
      },
      { role: "tool", tool_call_id: "c1", content: "ok" },
    ] as ChatCompletionRequest["messages"],
  });
  // Qwen3's template keeps the reasoning of the turns after the last user message.
  ok(promptOf(t.engine).includes("<think>\nI should call f.\n</think>"), promptOf(t.engine));
  await rejects(
    t.chat.create(
      {
        messages: [{ role: "assistant", content: "x", reasoning_content: 1 }, body.messages[0]],
      } as unknown as ChatCompletionRequest & { stream?: false },
    ),
    refused("messages", "reasoning_content"),
  );
});

Deno.test("reasoning: special tokens stay in the text a convention reads, unless asked", () => {
  const limits = { maxN: 1, contextLength: 8192, maxLogprobs: 20 };
  const job = (t: ModelText, extra: Record<string, unknown> = {}) =>
    parseJob({ model: "m", ...body, ...extra }, true, t, limits);
  equal(job(GPT_OSS).skipSpecial, false);
  equal(job(GPT_OSS).reasoning?.convention.name, "harmony");
  equal(job(QWEN3).skipSpecial, false);
  equal(job(QWEN3, { skip_special_tokens: true }).skipSpecial, true);
  equal(job(text("Qwen-Qwen2.5-7B-Instruct")).skipSpecial, true);
  equal(job(text("Qwen-Qwen2.5-7B-Instruct")).reasoning, undefined);
  // A constrained reply has no room to reason: it is read as content.
  equal(job(QWEN3, { response_format: { type: "json_object" } }).reasoning, undefined);
});

Deno.test("reasoning (gpt-oss): channel markers as special tokens, as gpt-oss's vocabulary has them", async () => {
  const json = JSON.parse(await gpt2Json());
  const markers = ["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>"];
  json.added_tokens.push(
    ...markers.map((content, i) => ({ id: 50257 + i, content, special: true, normalized: false })),
  );
  const tokenizer = parseTokenizer(JSON.stringify(json));
  const t = target({ tokenizer, chat: GPT_OSS.chat });
  t.engine.reply = HARMONY;
  ok(tokenizer.encode(HARMONY, { addSpecial: false }).includes(50260), "one token per marker");
  const m = (await t.chat.create(body)).choices[0]!.message;
  deepStrictEqual([m.reasoning_content, m.content], ["Simple sum. 4.", "2 + 2 = 4."]);
  const chunks: ChatCompletionChunk[] = [];
  for await (const c of await t.chat.create({ ...body, stream: true })) chunks.push(c);
  const deltas = chunks.map((c) => c.choices[0]!.delta);
  equal(deltas.map((d) => d.reasoning_content ?? "").join(""), "Simple sum. 4.");
  equal(deltas.map((d) => d.content ?? "").join(""), "2 + 2 = 4.");
});
