/**
 * Reasoning through `chat.completions.create` (the helpers `openModel` and `serve` share) on an
 * engine whose reply the test writes, a token per byte (fortune's tokenizer), so every marker is
 * split at every token boundary: Qwen3's and SmolLM3's `<think>` blocks and gpt-oss's channels
 * come back as `reasoning_content` and `reasoning` beside `content`, whole and streamed (the
 * reasoning deltas as they come, before any content, no marker text in either), with the
 * reasoning tokens in usage; a reply cut inside its reasoning; a block the generation prompt
 * opened; calls read from the answer only; completions left raw.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { specFiles } from "../adapters/deno/file_source.ts";
import { ChatTemplate } from "../text/chat.ts";
import { loadText, type ModelText } from "../text/load.ts";
import { ScriptedEngine } from "../../test/support/scripted_engine.ts";
import {
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatCompletionRequest,
  ChatCompletions,
  Completions,
} from "./completions.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;
const fortune = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" }));
const template = (name: string) =>
  Deno.readTextFileSync(
    new URL(`../../test/fixtures/chat_templates/${name}.jinja`, import.meta.url),
  );
const QWEN3 = template("Qwen-Qwen3-0.6B");

/** The helpers over a scripted engine with fortune's tokenizer and the template `source`. */
function target(source: string) {
  const text: ModelText = { tokenizer: fortune.tokenizer, chat: new ChatTemplate(source) };
  const engine = new ScriptedEngine("m", text.tokenizer);
  const t = { engine, text, model: "m", contextLength: 4096 };
  return { engine, chat: new ChatCompletions(t), completions: new Completions(t) };
}

const tokens = (s: string) => fortune.tokenizer.encode(s, { addSpecial: false }).length;
const body = { messages: [{ role: "user", content: "A haiku?" }] } satisfies ChatCompletionRequest;

const THOUGHT = "The user wants a haiku.\nKeep it short.";
const ANSWER = "Snow on the kiln.";
const QWEN_REPLY = `<think>\n${THOUGHT}\n</think>\n\n${ANSWER}`;

/** A stream's deltas put together, and the order in which their kinds came. */
async function collect(stream: AsyncIterable<ChatCompletionChunk>) {
  const chunks: ChatCompletionChunk[] = [];
  for await (const c of stream) chunks.push(c);
  const deltas = chunks.flatMap((c) => c.choices.map((ch) => ch.delta));
  return {
    chunks,
    deltas,
    content: deltas.map((d) => d.content ?? "").join(""),
    reasoning: deltas.map((d) => d.reasoning_content ?? "").join(""),
    kinds: deltas.flatMap((d) => d.reasoning_content ? ["r"] : d.content ? ["c"] : []).join(""),
    finish: chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).at(-1),
  };
}

Deno.test("reasoning chat (Qwen3): reasoning_content and reasoning beside content, whole; completions and other templates raw", async () => {
  const t = target(QWEN3);
  t.engine.reply = QWEN_REPLY;
  const r: ChatCompletion = await t.chat.create(body);
  const m = r.choices[0]!.message;
  deepStrictEqual(m, {
    role: "assistant",
    content: ANSWER,
    reasoning_content: THOUGHT,
    reasoning: THOUGHT,
  });
  equal(r.choices[0]!.finish_reason, "stop");
  equal(r.usage.completion_tokens, tokens(QWEN_REPLY));
  deepStrictEqual(r.usage.completion_tokens_details, {
    reasoning_tokens: tokens(`<think>\n${THOUGHT}\n</think>`),
  });
  // Completions are left raw, markers and all.
  const c = await t.completions.create({ prompt: "x", max_tokens: 200 });
  equal(c.choices[0]!.text, QWEN_REPLY);
  equal(c.usage?.completion_tokens_details, undefined);
  // A template that teaches no convention: no reasoning read.
  const other = target(template("Qwen-Qwen2.5-7B-Instruct"));
  other.engine.reply = QWEN_REPLY;
  const o = await other.chat.create(body);
  deepStrictEqual(o.choices[0]!.message, { role: "assistant", content: QWEN_REPLY });
  equal(o.usage.completion_tokens_details, undefined);
});

Deno.test("reasoning chat (Qwen3): streamed, reasoning deltas first and as they come", async () => {
  const t = target(QWEN3);
  t.engine.reply = QWEN_REPLY;
  const s = await collect(
    await t.chat.create({ ...body, stream: true, stream_options: { include_usage: true } }),
  );
  equal(s.reasoning, THOUGHT);
  equal(s.content, ANSWER);
  // A token per byte: the reasoning streams in many deltas, all before the answer's.
  ok(/^r{20,}c+$/.test(s.kinds), s.kinds);
  for (const d of s.deltas) {
    equal(d.reasoning, d.reasoning_content, "vLLM's alias carries the same text");
    ok(!`${d.content ?? ""}${d.reasoning ?? ""}`.includes("<"), "no marker text");
  }
  equal(s.finish, "stop");
  deepStrictEqual(s.chunks.at(-1)!.usage?.completion_tokens_details, {
    reasoning_tokens: tokens(`<think>\n${THOUGHT}\n</think>`),
  });
});

Deno.test("reasoning chat (Qwen3): cut by max_tokens inside the reasoning", async () => {
  const t = target(QWEN3);
  t.engine.reply = QWEN_REPLY;
  const max = tokens("<think>\nThe user wants");
  const r = await t.chat.create({ ...body, max_tokens: max });
  deepStrictEqual(r.choices[0]!.message, {
    role: "assistant",
    content: null,
    reasoning_content: "The user wants",
    reasoning: "The user wants",
  });
  equal(r.choices[0]!.finish_reason, "length");
  equal(r.usage.completion_tokens_details?.reasoning_tokens, max);
  const s = await collect(await t.chat.create({ ...body, max_tokens: max, stream: true }));
  equal(s.reasoning, "The user wants");
  equal(s.content, "");
  equal(s.finish, "length");
});

Deno.test("reasoning chat: a block the generation prompt opened (DeepSeek-R1 style)", async () => {
  const opened = QWEN3.replace(
    "'<|im_start|>assistant\\n' }}",
    "'<|im_start|>assistant\\n<think>\\n' }}",
  );
  const t = target(opened);
  t.engine.reply = `${THOUGHT}\n</think>\n\n${ANSWER}`;
  const m = (await t.chat.create(body)).choices[0]!.message;
  deepStrictEqual([m.reasoning_content, m.content], [THOUGHT, ANSWER]);
  const s = await collect(await t.chat.create({ ...body, stream: true }));
  deepStrictEqual([s.reasoning, s.content], [THOUGHT, ANSWER]);
});

Deno.test("reasoning chat (SmolLM3): its <think> block, whole and streamed", async () => {
  const t = target(template("HuggingFaceTB-SmolLM3-3B"));
  t.engine.reply = QWEN_REPLY;
  const m = (await t.chat.create(body)).choices[0]!.message;
  equal(m.reasoning_content, THOUGHT);
  equal(m.content, ANSWER);
  const s = await collect(await t.chat.create({ ...body, stream: true }));
  deepStrictEqual([s.reasoning, s.content], [THOUGHT, ANSWER]);
});

const WEATHER = '{"name": "get_weather", "arguments": {"city": "Zürich"}}';
const TIME = '{"name": "get_time", "arguments": {}}';
const tools: ChatCompletionRequest["tools"] = [
  { type: "function", function: { name: "get_weather", parameters: { type: "object" } } },
  { type: "function", function: { name: "get_time", parameters: { type: "object" } } },
];

Deno.test("reasoning chat (Qwen3): calls are read from the answer, not the reasoning", async () => {
  const t = target(QWEN3);
  const thought = `Maybe <tool_call>${TIME}</tool_call>? No: the weather.`;
  t.engine.reply = `<think>\n${thought}\n</think>\n\n<tool_call>\n${WEATHER}\n</tool_call>`;
  const r = await t.chat.create({ ...body, tools });
  const m = r.choices[0]!.message;
  equal(m.reasoning_content, thought);
  equal(m.content, null);
  deepStrictEqual(m.tool_calls?.map((c) => c.function), [
    { name: "get_weather", arguments: '{"city":"Zürich"}' },
  ]);
  equal(r.choices[0]!.finish_reason, "tool_calls");
  const s = await collect(await t.chat.create({ ...body, tools, stream: true }));
  equal(s.reasoning, thought);
  equal(s.content, "");
  deepStrictEqual(s.deltas.flatMap((d) => d.tool_calls ?? []).map((c) => c.function.name), [
    "get_weather",
    undefined,
  ]);
  equal(s.finish, "tool_calls");
});
