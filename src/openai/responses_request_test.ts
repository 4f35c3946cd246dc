/**
 * The Responses body's translation onto the chat path: each form of `input`, `instructions`,
 * flat function `tools`, `tool_choice`, `text.format`, `max_output_tokens` and
 * `reasoning.effort` gives the very job (prompt tokens, constraint, limits) of the chat body it
 * stands for; every field Kiln does not honour, and every bad value, is refused naming the
 * Responses field (never the chat field it became).
 */
import { deepStrictEqual, match, ok, strictEqual as equal, throws } from "node:assert/strict";
import { specFiles } from "../adapters/deno/file_source.ts";
import { EngineError } from "../contract/errors.ts";
import { ChatTemplate } from "../text/chat.ts";
import { loadText, type ModelText } from "../text/load.ts";
import { parseJob } from "./requests.ts";
import type { ConversationItem } from "./responses_input.ts";
import { responsesJob } from "./responses_request.ts";
import { startResponse } from "./responses.ts";
import { ResponseStore } from "./responses_store.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;
const fortune = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" }));
const template = (name: string): ModelText => ({
  tokenizer: fortune.tokenizer,
  chat: new ChatTemplate(
    Deno.readTextFileSync(new URL(`../../test/fixtures/chat_templates/${name}`, import.meta.url)),
  ),
});
const qwen = template("Qwen-Qwen3-0.6B.jinja");
const limits = { maxN: 8, contextLength: 4096, maxLogprobs: 20 };

/** The job of a Responses body and of the chat body it should be, side by side. */
function both(responses: Record<string, unknown>, chat: Record<string, unknown>, text = qwen) {
  const r = responsesJob({ model: "m", ...responses }, [], text, limits).job;
  const c = parseJob({ model: "m", ...chat }, true, text, limits);
  return { r, c };
}

function same(responses: Record<string, unknown>, chat: Record<string, unknown>, text = qwen) {
  const { r, c } = both(responses, chat, text);
  deepStrictEqual(r.prompt, c.prompt);
  deepStrictEqual(r.request(0), c.request(0));
  // The tool-call convention holds functions: compared by what JSON keeps of it.
  equal(JSON.stringify(r.structured), JSON.stringify(c.structured));
  equal(r.structured.calls?.convention.scan, c.structured.calls?.convention.scan);
}

const weather = {
  type: "function",
  name: "get_weather",
  description: "The weather of a city",
  parameters: { type: "object", properties: { city: { type: "string" } } },
  strict: true,
};
const chatWeather = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather of a city",
    parameters: weather.parameters,
  },
};

Deno.test("responses input: a string, instructions, roles and text parts as chat messages", () => {
  same({ input: "Hi" }, { messages: [{ role: "user", content: "Hi" }] });
  same(
    {
      instructions: "Be brief.",
      input: [
        { role: "developer", content: "Answer in French." },
        {
          type: "message",
          role: "user",
          content: [{ type: "input_text", text: "Hel" }, {
            type: "input_text",
            text: "lo",
          }],
        },
        { role: "assistant", content: [{ type: "output_text", text: "Bonjour" }] },
        { role: "user", content: "Again" },
      ],
    },
    {
      messages: [
        { role: "system", content: "Be brief." },
        { role: "system", content: "Answer in French." },
        { role: "user", content: "Hello" },
        { role: "assistant", content: "Bonjour" },
        { role: "user", content: "Again" },
      ],
    },
  );
});

Deno.test("responses input: calls join the assistant turn, outputs are tool messages, reasoning rides along", () => {
  const call = { call_id: "call_1", name: "get_weather", arguments: '{"city":"Bern"}' };
  same(
    {
      input: [
        { role: "user", content: "Weather?" },
        // An earlier response's output given back as it came (ids and status not read).
        {
          type: "reasoning",
          id: "rs_1",
          summary: [],
          content: [{ type: "reasoning_text", text: "Need it." }],
        },
        {
          type: "message",
          id: "msg_1",
          role: "assistant",
          status: "completed",
          content: [{
            type: "output_text",
            text: "Checking.",
            annotations: [],
          }],
        },
        { type: "function_call", id: "fc_1", status: "completed", ...call },
        { type: "function_call_output", call_id: "call_1", output: "sunny" },
      ],
      tools: [weather],
    },
    {
      messages: [
        { role: "user", content: "Weather?" },
        {
          role: "assistant",
          content: "Checking.",
          reasoning_content: "Need it.",
          tool_calls: [{
            id: "call_1",
            type: "function",
            function: { name: "get_weather", arguments: call.arguments },
          }],
        },
        { role: "tool", tool_call_id: "call_1", name: "get_weather", content: "sunny" },
      ],
      tools: [chatWeather],
    },
  );
});

Deno.test("responses tools, tool_choice, text.format and max_output_tokens as chat's fields", () => {
  const input = "Weather?";
  const messages = [{ role: "user", content: input }];
  for (
    const [choice, chatChoice] of [
      ["auto", "auto"],
      ["required", "required"],
      ["none", "none"],
      [{ type: "function", name: "get_weather" }, {
        type: "function",
        function: { name: "get_weather" },
      }],
    ]
  ) {
    same(
      { input, tools: [weather], tool_choice: choice, parallel_tool_calls: false },
      { messages, tools: [chatWeather], tool_choice: chatChoice, parallel_tool_calls: false },
    );
  }
  const schema = { type: "object", properties: { a: { type: "integer" } }, required: ["a"] };
  same(
    {
      input,
      text: { format: { type: "json_schema", name: "A", schema, strict: true } },
      max_output_tokens: 40,
      temperature: 0.5,
      top_p: 0.9,
    },
    {
      messages,
      response_format: { type: "json_schema", json_schema: { name: "A", schema, strict: true } },
      max_completion_tokens: 40,
      temperature: 0.5,
      top_p: 0.9,
    },
  );
  same({ input, text: { format: { type: "json_object" } } }, {
    messages,
    response_format: { type: "json_object" },
  });
  same({ input, text: { format: { type: "text" } } }, { messages });
});

Deno.test("responses reasoning.effort is chat's reasoning_effort, refused by its own name where it means nothing", () => {
  const oss = template("openai-gpt-oss-120b.jinja");
  same({ input: "Hi", reasoning: { effort: "low" } }, {
    messages: [{ role: "user", content: "Hi" }],
    reasoning_effort: "low",
  }, oss);
  const prompt =
    responsesJob({ model: "m", input: "Hi", reasoning: { effort: "low" } }, [], oss, limits)
      .job.prompt;
  match(fortune.tokenizer.decode(prompt), /Reasoning: low/);
  refused({ reasoning: { effort: "low" } }, "reasoning.effort", /takes no reasoning effort/);
});

/** The error `responsesJob` throws for `body` (with `input: "Hi"` unless it has its own). */
function refused(body: Record<string, unknown>, param: string, message?: RegExp) {
  throws(
    () => responsesJob({ model: "m", input: "Hi", ...body }, [], qwen, limits),
    (e: unknown) => {
      ok(e instanceof EngineError, String(e));
      equal(e.type, "InvalidArgument");
      equal(e.param, param, e.message);
      ok(e.message.startsWith(param), e.message);
      if (message) match(e.message, message);
      return true;
    },
  );
}

Deno.test("responses refusals name the Responses field", () => {
  refused({ prompt_cache_key: "k" }, "prompt_cache_key", /unsupported field for responses/);
  refused({ top_logprobs: 2 }, "top_logprobs");
  refused({ input: undefined }, "input", /required/);
  refused({ input: [] }, "input", /required/);
  refused({ input: 3 }, "input");
  refused({ input: [{ role: "tool", content: "x" }] }, "input", /\[0\]\.role/);
  refused(
    { input: [{ role: "user", content: [{ type: "input_image", image_url: "x" }] }] },
    "input",
    /\[0\]\.content\[0\]: only text parts/,
  );
  refused({ input: [{ type: "item_reference", id: "msg_1" }] }, "input", /item references/);
  refused({ input: [{ type: "function_call", call_id: "c", name: "f" }] }, "input", /arguments/);
  refused({ input: [{ type: "web_search_call" }] }, "input", /\[0\]\.type/);
  refused({ tools: [{ type: "web_search" }] }, "tools", /only function tools/);
  refused({ tools: [{ ...weather, name: "a b" }] }, "tools", /name/);
  refused({ tools: [{ ...weather, defer_loading: true }] }, "tools", /defer_loading/);
  refused({ tools: [weather], tool_choice: { type: "allowed_tools", tools: [] } }, "tool_choice");
  refused({ tools: [weather], tool_choice: { type: "function", name: "nope" } }, "tool_choice");
  refused({ tool_choice: "required" }, "tool_choice", /no tools/);
  refused({ text: { format: { type: "json_schema", schema: {} } } }, "text.format", /name/);
  refused({ text: { format: { type: "yaml" } } }, "text.format", /type/);
  refused({ text: { verbosity: "low" } }, "text.verbosity");
  refused(
    { text: { format: { type: "json_object" } }, tools: [weather], tool_choice: "required" },
    "text.format",
    /cannot be combined/,
  );
  refused({ max_output_tokens: -1 }, "max_output_tokens", /an integer/);
  refused({ max_output_tokens: 5000 }, "max_output_tokens", /does not fit/);
  refused({ input: "word ".repeat(5000) }, "input", /the context is 4096/);
  refused({ temperature: 3 }, "temperature");
  refused({ reasoning: { summary: "auto" } }, "reasoning.summary", /summaries/);
  refused({ truncation: "auto" }, "truncation");
  refused({ include: ["reasoning.encrypted_content"] }, "include");
  refused({ background: true }, "background");
  refused({ store: "yes" }, "store");
  refused({ metadata: { a: 1 } }, "metadata");
  refused({ previous_response_id: 7 }, "previous_response_id");
});

Deno.test("responses: what asks for nothing is accepted, and the settings are echoed", () => {
  const { echo, store } = responsesJob(
    {
      model: "m",
      input: "Hi",
      store: false,
      metadata: { k: "v" },
      user: "u",
      service_tier: "flex",
      truncation: "disabled",
      include: [],
      background: false,
      instructions: "Be brief.",
      max_output_tokens: 10,
    },
    [],
    qwen,
    limits,
  );
  equal(store, false);
  deepStrictEqual(echo, {
    instructions: "Be brief.",
    max_output_tokens: 10,
    metadata: { k: "v" },
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    service_tier: "default",
    store: false,
    temperature: 1,
    text: { format: { type: "text" } },
    tool_choice: "auto",
    tools: [],
    top_p: 1,
    truncation: "disabled",
    user: "u",
  });
});

Deno.test("responses previous_response_id: the kept conversation comes first; one not kept is refused with OpenAI's message", () => {
  const store = new ResponseStore();
  const prior: ConversationItem[] = [
    { type: "message", role: "user", content: "My name is Ada." },
    { type: "message", role: "assistant", content: "Hello Ada." },
  ];
  const response = {
    id: "resp_1",
    object: "response" as const,
    created_at: 0,
    status: "completed" as const,
    error: null,
    incomplete_details: null,
    model: "m",
    output: [],
    usage: null,
  };
  store.put(response, prior);
  const rj = startResponse(
    { model: "m", previous_response_id: "resp_1", input: "Name?", instructions: "Be brief." },
    store,
    qwen,
    limits,
  );
  const chat = parseJob(
    {
      model: "m",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "My name is Ada." },
        { role: "assistant", content: "Hello Ada." },
        { role: "user", content: "Name?" },
      ],
    },
    true,
    qwen,
    limits,
  );
  deepStrictEqual(rj.job.prompt, chat.prompt);
  equal(rj.items.length, 3);
  equal(rj.echo.previous_response_id, "resp_1");
  throws(
    () =>
      startResponse(
        { model: "m", previous_response_id: "resp_2", input: "x" },
        store,
        qwen,
        limits,
      ),
    (e: unknown) =>
      e instanceof EngineError && e.param === "previous_response_id" &&
      e.message === "Previous response with id 'resp_2' not found.",
  );
});
