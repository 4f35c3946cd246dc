/**
 * The `openai` package's cells of the client x feature matrix: each feature called as the
 * package's README and API reference show it, the reply's shape and content checked.
 */
import { deepStrictEqual, match, ok, strictEqual as equal } from "node:assert/strict";
import OpenAI from "openai";
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

const openai = (t: Target) => new OpenAI({ baseURL: t.baseURL, apiKey: "x", maxRetries: 0 });
const chatBody = (t: Target) => ({
  model: t.model,
  messages: [{ role: "user" as const, content: PROMPT }],
  max_tokens: 24,
  temperature: 0,
});

/** Reads an `openai` chat stream into its text and finish reason. */
async function openaiStream(t: Target, extra: Record<string, unknown> = {}) {
  let text = "", finish = "", chunks = 0;
  let usage: OpenAI.CompletionUsage | undefined;
  const stream = await openai(t).chat.completions.create({
    ...chatBody(t),
    ...extra,
    stream: true,
  } as OpenAI.Chat.ChatCompletionCreateParamsStreaming);
  for await (const c of stream) {
    chunks++;
    text += c.choices[0]?.delta.content ?? "";
    finish = c.choices[0]?.finish_reason ?? finish;
    usage = c.usage ?? usage;
  }
  return { text, finish, chunks, usage };
}

/** A tool_choice's calls through the `openai` client. */
async function openaiTools(t: Target, choice: OpenAI.Chat.ChatCompletionToolChoiceOption) {
  const r = await openai(t).chat.completions.create({
    ...chatBody(t),
    max_tokens: 200,
    tools: TOOLS,
    tool_choice: choice,
  });
  const m = r.choices[0]!.message;
  const calls = (m.tool_calls ?? []).map((c) =>
    checkWeather((c as OpenAI.Chat.ChatCompletionMessageFunctionToolCall).function.arguments)
  );
  if (choice === "auto") {
    ok(calls.length > 0 || typeof m.content === "string", "auto: text or calls");
    return calls.length ? calls.join(", ") : `text (${r.choices[0]!.finish_reason})`;
  }
  ok(calls.length >= 1, "a call");
  // Fortune never learnt to stop after a call: under `required` it may call until `max_tokens`
  // (finish `length`, the complete calls kept), where a chat model would end with `tool_calls`.
  ok(["tool_calls", "length"].includes(r.choices[0]!.finish_reason), r.choices[0]!.finish_reason);
  return calls.join(", ");
}

export const OPENAI_CELLS: Record<string, Cell> = {
  chat: async (t) => {
    const r = await openai(t).chat.completions.create(chatBody(t));
    equal(typeof r.choices[0]!.message.content, "string");
    equal(r.model, t.model);
    return `${r.choices[0]!.message.content!.length} chars, ${r.choices[0]!.finish_reason}`;
  },
  stream: async (t) => {
    const whole = await openai(t).chat.completions.create(chatBody(t));
    const s = await openaiStream(t);
    equal(s.text, whole.choices[0]!.message.content, "greedy: streamed = whole");
    return `${s.chunks} chunks, same text`;
  },
  usage: async (t) => {
    const s = await openaiStream(t, { stream_options: { include_usage: true } });
    ok(s.usage && s.usage.prompt_tokens > 0 && s.usage.completion_tokens > 0);
    equal(s.usage.total_tokens, s.usage.prompt_tokens + s.usage.completion_tokens);
    return `${s.usage.prompt_tokens}+${s.usage.completion_tokens}`;
  },
  "JSON schema": async (t) => {
    const r = await openai(t).chat.completions.parse({
      ...chatBody(t),
      max_tokens: 60,
      response_format: {
        type: "json_schema",
        json_schema: { name: "fortune", schema: FORTUNE_SCHEMA, strict: true },
      },
    });
    return `parse: ${checkFortune(r.choices[0]!.message.parsed)}`;
  },
  "tools auto": (t) => openaiTools(t, "auto"),
  "tools required": (t) => openaiTools(t, "required"),
  "tools named": (t) => openaiTools(t, { type: "function", function: { name: "get_weather" } }),
  n: async (t) => {
    const r = await openai(t).chat.completions.create({ ...chatBody(t), n: 3, temperature: 1 });
    deepStrictEqual(r.choices.map((c) => c.index), [0, 1, 2]);
    return "3 choices";
  },
  logprobs: async (t) => {
    const r = await openai(t).chat.completions.create({
      ...chatBody(t),
      logprobs: true,
      top_logprobs: 2,
    });
    const lp = r.choices[0]!.logprobs!.content!;
    equal(lp.length, r.usage!.completion_tokens);
    for (const e of lp) ok(e.logprob <= 0 && e.top_logprobs.length >= 1);
    return `${lp.length} tokens`;
  },
  seed: async (t) => {
    const body = (seed: number) => ({ ...chatBody(t), temperature: 1, seed });
    const create = (seed: number) => openai(t).chat.completions.create(body(seed));
    const [a, b, c] = await Promise.all([create(42), create(42), create(43)]);
    const text = (r: typeof a) => r!.choices[0]!.message.content;
    equal(text(a), text(b), "seed 42 twice");
    ok(text(a) !== text(c), "seed 43 draws another text");
    return "same seed, same text; another seed, another";
  },
  stop: async (t) => {
    const r = await openai(t).chat.completions.create({ ...chatBody(t), stop: ["e"] });
    ok(!r.choices[0]!.message.content!.includes("e"));
    return `finish ${r.choices[0]!.finish_reason}`;
  },
  abort: async (t) => {
    const ac = new AbortController();
    const stream = await openai(t).chat.completions.create(
      { ...chatBody(t), max_tokens: 200, stream: true },
      { signal: ac.signal },
    );
    let got = 0;
    // The client (7.x) ends the iteration quietly when its signal aborts (older ones threw
    // `APIUserAbortError`): either way no chunk of the 200 asked for may follow for long.
    try {
      for await (const _ of stream) if (++got === 2) ac.abort();
    } catch (e) {
      match(String((e as Error).name), /Abort/);
    }
    ok(got < 8, `${got} chunks after the abort`);
    const after = await openai(t).chat.completions.create(chatBody(t));
    ok(after.choices[0]);
    return `aborted after ${got} chunks; the next request served`;
  },
  "completions prompt array": async (t) => {
    const r = await openai(t).completions.create({
      model: t.model,
      prompt: ["You will", "A friend"],
      n: 2,
      max_tokens: 8,
      temperature: 1,
    });
    deepStrictEqual(r.choices.map((c) => c.index).sort(), [0, 1, 2, 3]);
    return "2 prompts x n 2: indices 0-3";
  },
  "responses.create": async (t) => {
    const r = await openai(t).responses.create({
      model: t.model,
      input: PROMPT,
      max_output_tokens: 24,
      temperature: 0,
    });
    equal(r.object, "response");
    ok(typeof r.output_text === "string" && r.output_text.length > 0);
    ok(r.usage && r.usage.output_tokens > 0);
    return `${r.output_text.length} chars, ${r.status}`;
  },
  "responses stream": async (t) => {
    const stream = await openai(t).responses.create({
      model: t.model,
      input: PROMPT,
      max_output_tokens: 24,
      temperature: 0,
      stream: true,
    });
    const types = new Set<string>();
    let text = "", done = "";
    for await (const e of stream) {
      types.add(e.type);
      if (e.type === "response.output_text.delta") text += e.delta;
      if (e.type === "response.completed" || e.type === "response.incomplete") {
        // `output_text` is the client's convenience on `create`'s result only: read the items.
        done = e.response.output.flatMap((o) => o.type === "message" ? o.content : [])
          .map((c) => c.type === "output_text" ? c.text : "").join("");
      }
    }
    for (
      const t of ["response.created", "response.output_text.delta", "response.output_item.done"]
    ) {
      ok(types.has(t), `event ${t}`);
    }
    equal(text, done, "the deltas make the final text");
    return `${types.size} event types`;
  },
  "responses function tool": async (t) => {
    const r = await openai(t).responses.create({
      model: t.model,
      input: "Weather in Paris?",
      tools: [{ type: "function", name: "get_weather", parameters: WEATHER, strict: true }],
      tool_choice: "required",
      max_output_tokens: 200,
    });
    const call = r.output.find((o) => o.type === "function_call");
    ok(call && call.type === "function_call" && call.name === "get_weather" && call.call_id);
    return checkWeather(call.arguments);
  },
  "responses text.format": async (t) => {
    const r = await openai(t).responses.create({
      model: t.model,
      input: PROMPT,
      text: { format: { type: "json_schema", name: "fortune", schema: FORTUNE_SCHEMA } },
      max_output_tokens: 100,
    });
    return checkFortune(JSON.parse(r.output_text));
  },
  "models.retrieve": async (t) => {
    const m = await openai(t).models.retrieve(t.model);
    equal(m.id, t.model);
    equal(m.object, "model");
    return m.id;
  },
};
