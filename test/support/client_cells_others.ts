/**
 * The Vercel AI SDK's (over `@ai-sdk/openai-compatible`) and LangChain's (`ChatOpenAI`, `OpenAI`)
 * cells of the client x feature matrix; `null` where the client has no call for the feature.
 */
import { deepStrictEqual, match, ok, strictEqual as equal } from "node:assert/strict";
import { generateObject, generateText, jsonSchema, streamText, tool, type ToolSet } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ChatOpenAI, OpenAI as LangChainOpenAI } from "@langchain/openai";
import {
  type Cell,
  checkFortune,
  checkWeather,
  FORTUNE_SCHEMA,
  PROMPT,
  type Target,
  TOOLS,
  WEATHER,
} from "./client_shapes.ts";

const aiModel = (t: Target) =>
  // `supportsStructuredOutputs`: the provider then sends `json_schema` (else `json_object`).
  createOpenAICompatible({
    name: "kiln",
    baseURL: t.baseURL,
    apiKey: "x",
    supportsStructuredOutputs: true,
  })(t.model);
const aiBase = (t: Target) => ({
  model: aiModel(t),
  prompt: PROMPT,
  maxOutputTokens: 24,
  temperature: 0,
  maxRetries: 0,
});
const aiTools: ToolSet = {
  get_weather: tool({
    description: "The weather in a city",
    inputSchema: jsonSchema<{ city: string }>(WEATHER),
  }) as ToolSet[string],
};

/** A tool choice through `generateText`. */
async function aiToolCall(t: Target, toolChoice: "auto" | "required" | "named") {
  const r = await generateText({
    ...aiBase(t),
    maxOutputTokens: 200,
    tools: aiTools,
    toolChoice: toolChoice === "named" ? { type: "tool", toolName: "get_weather" } : toolChoice,
  });
  if (toolChoice === "auto" && r.toolCalls.length === 0) return `text (${r.finishReason})`;
  ok(r.toolCalls.length >= 1);
  return r.toolCalls.map((c) => checkWeather(c.input)).join(", ");
}

export const AI_CELLS: Record<string, Cell | null> = {
  chat: async (t) => {
    const r = await generateText(aiBase(t));
    equal(typeof r.text, "string");
    return `${r.text.length} chars, ${r.finishReason}`;
  },
  stream: async (t) => {
    const whole = await generateText(aiBase(t));
    const s = streamText(aiBase(t));
    let text = "";
    for await (const d of s.textStream) text += d;
    equal(text, whole.text, "greedy: streamed = whole");
    return "same text";
  },
  usage: async (t) => {
    const r = await generateText(aiBase(t));
    ok((r.usage.inputTokens ?? 0) > 0 && (r.usage.outputTokens ?? 0) > 0);
    return `${r.usage.inputTokens}+${r.usage.outputTokens}`;
  },
  "JSON schema": async (t) => {
    const r = await generateObject({
      ...aiBase(t),
      maxOutputTokens: 100,
      schema: jsonSchema(FORTUNE_SCHEMA),
    });
    return `generateObject: ${checkFortune(r.object)}`;
  },
  "tools auto": (t) => aiToolCall(t, "auto"),
  "tools required": (t) => aiToolCall(t, "required"),
  "tools named": (t) => aiToolCall(t, "named"),
  n: null,
  logprobs: null,
  seed: async (t) => {
    const draw = (seed: number) => generateText({ ...aiBase(t), temperature: 1, seed });
    const [a, b, c] = await Promise.all([draw(42), draw(42), draw(43)]);
    equal(a.text, b.text, "seed 42 twice");
    ok(a.text !== c.text, "seed 43 draws another text");
    return "same seed, same text; another seed, another";
  },
  stop: async (t) => {
    const r = await generateText({ ...aiBase(t), stopSequences: ["e"] });
    ok(!r.text.includes("e"));
    return `finish ${r.finishReason}`;
  },
  abort: async (t) => {
    const ac = new AbortController();
    let got = 0;
    const errors: unknown[] = [];
    const s = streamText({
      ...aiBase(t),
      maxOutputTokens: 200,
      abortSignal: ac.signal,
      onError: ({ error }) => void errors.push(error),
    });
    for await (const _ of s.textStream) if (++got === 2) ac.abort();
    ok(got >= 2 && got < 200, `${got} deltas`);
    const after = await generateText(aiBase(t));
    equal(typeof after.text, "string");
    return `aborted after ${got} deltas; the next request served`;
  },
  "completions prompt array": null,
  "responses.create": null,
  "responses stream": null,
  "responses function tool": null,
  "responses text.format": null,
  "models.retrieve": null,
};

const chat = (t: Target, extra: Record<string, unknown> = {}) =>
  new ChatOpenAI({
    model: t.model,
    apiKey: "x",
    configuration: { baseURL: t.baseURL },
    maxTokens: 24,
    temperature: 0,
    maxRetries: 0,
    ...extra,
  });

/** `bindTools` with a tool choice, then `invoke`. */
async function lcTools(t: Target, choice: string, responses = false) {
  const m = chat(t, { maxTokens: 200, ...(responses ? { useResponsesApi: true } : {}) })
    .bindTools(TOOLS, { tool_choice: choice });
  const r = await m.invoke("Weather in Paris?");
  deepStrictEqual(r.invalid_tool_calls ?? [], []);
  if (choice === "auto" && !r.tool_calls?.length) return "text";
  ok((r.tool_calls ?? []).length >= 1);
  return r.tool_calls!.map((c) => checkWeather(c.args)).join(", ");
}

export const LANGCHAIN_CELLS: Record<string, Cell | null> = {
  chat: async (t) => {
    const r = await chat(t).invoke(PROMPT);
    equal(typeof r.content, "string");
    return `${String(r.content).length} chars`;
  },
  stream: async (t) => {
    const whole = await chat(t).invoke(PROMPT);
    let text = "";
    for await (const c of await chat(t).stream(PROMPT)) text += String(c.content);
    equal(text, String(whole.content), "greedy: streamed = whole");
    return "same text";
  },
  usage: async (t) => {
    const r = await chat(t).invoke(PROMPT);
    const u = r.usage_metadata as unknown as {
      input_tokens: number;
      output_tokens: number;
      total_tokens: number;
    };
    ok(u.input_tokens > 0 && u.output_tokens > 0);
    equal(u.total_tokens, u.input_tokens + u.output_tokens);
    return `${u.input_tokens}+${u.output_tokens}`;
  },
  "JSON schema": async (t) => {
    const s = chat(t, { maxTokens: 60 }).withStructuredOutput(
      { title: "fortune", ...FORTUNE_SCHEMA },
      { method: "jsonSchema" },
    );
    return `withStructuredOutput: ${checkFortune(await s.invoke(PROMPT))}`;
  },
  "tools auto": (t) => lcTools(t, "auto"),
  "tools required": (t) => lcTools(t, "required"),
  "tools named": (t) => lcTools(t, "get_weather"),
  n: async (t) => {
    const r = await chat(t, { n: 2, temperature: 1 }).generate([[["human", PROMPT]]]);
    equal(r.generations[0]!.length, 2);
    return "2 generations";
  },
  logprobs: async (t) => {
    const r = await chat(t, { logprobs: true, topLogprobs: 2 }).invoke(PROMPT);
    const lp = (r.response_metadata.logprobs as { content: { logprob: number }[] }).content;
    ok(lp.length > 0 && lp.every((e) => e.logprob <= 0));
    return `${lp.length} tokens`;
  },
  seed: async (t) => {
    const m = chat(t, { temperature: 1 });
    const draw = (seed: number) => m.invoke(PROMPT, { seed } as never);
    const [a, b, c] = await Promise.all([draw(42), draw(42), draw(43)]);
    equal(String(a.content), String(b.content), "seed 42 twice");
    ok(String(a.content) !== String(c.content), "seed 43 draws another text");
    return "same seed, same text; another seed, another";
  },
  stop: async (t) => {
    const r = await chat(t).invoke(PROMPT, { stop: ["e"] });
    ok(!String(r.content).includes("e"));
    return `finish ${r.response_metadata.finish_reason}`;
  },
  abort: async (t) => {
    const ac = new AbortController();
    let got = 0;
    try {
      for await (
        const _ of await chat(t, { maxTokens: 200 }).stream(PROMPT, { signal: ac.signal })
      ) {
        if (++got === 2) ac.abort();
      }
      throw new Error("the stream ended without the abort");
    } catch (e) {
      match(String((e as Error).message) + (e as Error).name, /abort/i);
    }
    ok(await chat(t).invoke(PROMPT));
    return `aborted after ${got} chunks; the next request served`;
  },
  "completions prompt array": async (t) => {
    const llm = new LangChainOpenAI({
      model: t.model,
      apiKey: "x",
      configuration: { baseURL: t.baseURL },
      maxTokens: 8,
      maxRetries: 0,
    });
    const r = await llm.generate(["You will", "A friend"]);
    equal(r.generations.length, 2);
    return "OpenAI.generate: 2 prompts in one request";
  },
  "responses.create": async (t) => {
    const r = await chat(t, { useResponsesApi: true }).invoke(PROMPT);
    ok(r.text.length > 0);
    return `useResponsesApi: ${r.text.length} chars`;
  },
  "responses stream": async (t) => {
    let text = "";
    for await (const c of await chat(t, { useResponsesApi: true }).stream(PROMPT)) text += c.text;
    ok(text.length > 0);
    return `useResponsesApi stream: ${text.length} chars`;
  },
  // A named tool: with `useResponsesApi`, LangChain (1.5) sends no `tool_choice` for "required".
  "responses function tool": (t) => lcTools(t, "get_weather", true),
  "responses text.format": async (t) => {
    const s = chat(t, { maxTokens: 60, useResponsesApi: true }).withStructuredOutput(
      { title: "fortune", ...FORTUNE_SCHEMA },
      { method: "jsonSchema" },
    );
    return `withStructuredOutput: ${checkFortune(await s.invoke(PROMPT))}`;
  },
  "models.retrieve": null,
};
