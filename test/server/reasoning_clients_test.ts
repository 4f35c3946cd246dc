/**
 * Reasoning output through `serve` as real clients read it, on an engine whose reply the test
 * writes (fortune's tokenizer, a token per byte; Qwen3's template): the `openai` client's
 * `chat.completions.create` gets `reasoning_content` (and vLLM's `reasoning`) beside `content`,
 * whole and streamed, with `reasoning_tokens` in usage; the Vercel AI SDK's `generateText` and
 * `streamText` give it as `reasoningText`; LangChain's `ChatOpenAI` as
 * `additional_kwargs.reasoning_content`. `chat_template_kwargs` switches thinking off, and
 * `reasoning_effort`, which Qwen3's template does not read, is a 400 naming the field.
 */
import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import OpenAI from "openai";
import { generateText, streamText } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ChatOpenAI } from "@langchain/openai";
import type { AIMessageChunk } from "@langchain/core/messages";
import { qwen } from "../support/qwen_text.ts";
import { serveQwen } from "../support/qwen_server.ts";
import { ScriptedEngine } from "../support/scripted_engine.ts";

const THOUGHT = "The user asks for a sum.\n2 + 2 is 4.";
const ANSWER = "It is 4.";
const REPLY = `<think>\n${THOUGHT}\n</think>\n\n${ANSWER}`;
const REASONING_TOKENS = qwen.tokenizer.encode(`<think>\n${THOUGHT}\n</think>`, {
  addSpecial: false,
}).length;
const PROMPT = "2 + 2?";

const serve = () => serveQwen(new ScriptedEngine("qwen", qwen.tokenizer, { script: () => REPLY }));

/** The reasoning fields the `openai` client passes through untyped. */
type Reasoned = { reasoning_content?: string; reasoning?: string };

const test = (name: string, fn: (baseURL: string, engine: ScriptedEngine) => Promise<void>) =>
  Deno.test({
    name,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      const s = await serve();
      try {
        await fn(s.baseURL, s.engine);
      } finally {
        await s.close();
      }
    },
  });

test("openai client: reasoning_content whole, with reasoning_tokens", async (baseURL) => {
  const client = new OpenAI({ baseURL, apiKey: "x", maxRetries: 0 });
  const r = await client.chat.completions.create({
    model: "qwen",
    messages: [{ role: "user", content: PROMPT }],
  });
  const m = r.choices[0]!.message as OpenAI.Chat.ChatCompletionMessage & Reasoned;
  equal(m.content, ANSWER);
  equal(m.reasoning_content, THOUGHT);
  equal(m.reasoning, THOUGHT);
  equal(r.usage?.completion_tokens_details?.reasoning_tokens, REASONING_TOKENS);
});

test("openai client: reasoning_content streamed, before the content", async (baseURL) => {
  const client = new OpenAI({ baseURL, apiKey: "x", maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: "qwen",
    messages: [{ role: "user", content: PROMPT }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let reasoning = "", alias = "", content = "", order = "", tokens: number | undefined;
  for await (const chunk of stream) {
    tokens ??= chunk.usage?.completion_tokens_details?.reasoning_tokens;
    const d = chunk.choices[0]?.delta as (OpenAI.Chat.ChatCompletionChunk.Choice.Delta & Reasoned);
    if (d === undefined) continue;
    reasoning += d.reasoning_content ?? "";
    alias += d.reasoning ?? "";
    content += d.content ?? "";
    order += d.reasoning_content ? "r" : d.content ? "c" : "";
  }
  deepStrictEqual([reasoning, alias, content], [THOUGHT, THOUGHT, ANSWER]);
  ok(/^r{10,}c+$/.test(order), order);
  equal(tokens, REASONING_TOKENS);
});

test("openai client: chat_template_kwargs switch thinking off; reasoning_effort is refused", async (
  baseURL,
  engine,
) => {
  const client = new OpenAI({ baseURL, apiKey: "x", maxRetries: 0 });
  const messages = [{ role: "user" as const, content: PROMPT }];
  const body = { model: "qwen", messages, chat_template_kwargs: { enable_thinking: false } };
  await client.chat.completions.create(body as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);
  const prompt = qwen.tokenizer.decode(engine.requests.at(-1)!.token_ids, { skipSpecial: false });
  ok(prompt.endsWith("<think>\n\n</think>\n\n"), prompt);
  await rejects(
    client.chat.completions.create({ model: "qwen", messages, reasoning_effort: "low" }),
    (e) =>
      e instanceof OpenAI.BadRequestError &&
      (e.error as { param?: string }).param === "reasoning_effort",
  );
});

test("AI SDK: reasoningText from generateText and streamText", async (baseURL) => {
  const provider = createOpenAICompatible({ name: "kiln", baseURL, apiKey: "x" });
  const options = { model: provider("qwen"), prompt: PROMPT, maxRetries: 0 };
  const r = await generateText(options);
  deepStrictEqual([r.reasoningText, r.text], [THOUGHT, ANSWER]);
  const s = streamText(options);
  deepStrictEqual([await s.reasoningText, await s.text], [THOUGHT, ANSWER]);
});

test("LangChain: additional_kwargs.reasoning_content, invoke and stream", async (baseURL) => {
  const model = new ChatOpenAI({
    model: "qwen",
    apiKey: "x",
    configuration: { baseURL },
    maxRetries: 0,
  });
  const m = await model.invoke(PROMPT);
  deepStrictEqual([m.additional_kwargs.reasoning_content, m.content], [THOUGHT, ANSWER]);
  let whole: AIMessageChunk | undefined;
  for await (const chunk of await model.stream(PROMPT)) {
    whole = whole === undefined ? chunk : whole.concat(chunk);
  }
  deepStrictEqual([whole!.additional_kwargs.reasoning_content, whole!.content], [THOUGHT, ANSWER]);
});
