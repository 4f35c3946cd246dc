/**
 * `response_format`, `tools`, `tool_choice` and `parallel_tool_calls` in the request the engine
 * gets: Dynamo's `sampling_options.guided_decoding` for every choice, the functions rendered by
 * the model's template into the prompt, and the 400s naming the field for what cannot be honoured.
 */
import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { specFiles } from "../adapters/deno/file_source.ts";
import { TOOL_CALL_CONVENTIONS } from "./tool_calls.ts";
import { ChatTemplate } from "../text/chat.ts";
import { encodeChat, loadText, type ModelText } from "../text/load.ts";
import { EngineError } from "../contract/errors.ts";
import { openAIError } from "./errors.ts";
import { parseJob } from "./requests.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;
const QWEN3 = new URL("../../test/fixtures/chat_templates/Qwen-Qwen3-0.6B.jinja", import.meta.url);
const fortune = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" }));
/** Fortune's tokenizer under Qwen3's template, whose tool calls are `<tool_call>` JSON. */
const qwen: ModelText = {
  tokenizer: fortune.tokenizer,
  chat: new ChatTemplate(Deno.readTextFileSync(QWEN3)),
};
/** Fortune's tokenizer under the plain default template, which shows no call format. */
const plain: ModelText = { tokenizer: fortune.tokenizer, chat: ChatTemplate.fromConfig({}) };
const limits = { maxN: 8, contextLength: 4096, maxLogprobs: 20 };
const messages = [{ role: "user", content: "Weather in Zürich?" }];
const chat = (body: Record<string, unknown>, text = qwen) =>
  parseJob({ model: "m", messages, ...body }, true, text, limits);
const guided = (body: Record<string, unknown>, choice = 0) =>
  chat(body).request(choice).sampling_options.guided_decoding;

const weather = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The current weather in a city.",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};
const time = { type: "function", function: { name: "get_time" } };
const callOf = (name: string, parameters: unknown) => ({
  type: "object",
  properties: { name: { type: "string", enum: [name] }, arguments: parameters },
  required: ["name", "arguments"],
  additionalProperties: false,
});

Deno.test("response_format becomes guided_decoding.json, for every choice and both forms", () => {
  const schema = { type: "object", properties: { n: { type: "integer", minimum: 0 } } };
  deepStrictEqual(guided({ response_format: { type: "json_object" } }), {
    json: { type: "object" },
  });
  const both = chat({
    n: 2,
    response_format: { type: "json_schema", json_schema: { name: "n", schema, strict: true } },
  });
  for (const i of [0, 1]) {
    deepStrictEqual(both.request(i).sampling_options.guided_decoding, { json: schema });
  }
  equal(both.structured.guidedBy, "response_format");
  const text = chat({ response_format: { type: "text" } }).request(0).sampling_options;
  ok(!("guided_decoding" in text), "text asks for nothing");
  const completion = parseJob(
    {
      model: "m",
      prompt: "Hi",
      response_format: { type: "json_schema", json_schema: { name: "n", schema } },
    },
    false,
    fortune,
    limits,
  );
  deepStrictEqual(completion.request(0).sampling_options.guided_decoding, { json: schema });
});

Deno.test("tools are rendered by the template; auto reads calls, unconstrained", () => {
  const job = chat({ tools: [weather, time] });
  ok(job.request(0).sampling_options.guided_decoding === undefined);
  equal(job.structured.calls?.convention, TOOL_CALL_CONVENTIONS.get("<tool_call>"));
  equal(job.structured.calls?.maxCalls, Infinity);
  equal(job.skipSpecial, false, "call markers may be special tokens");
  deepStrictEqual(job.prompt, encodeChat(qwen, messages, { tools: [weather, time] }));
  const prompt = fortune.tokenizer.decode(job.prompt, { skipSpecial: false });
  ok(prompt.includes('"name": "get_weather"') && prompt.includes("<tool_call>"), prompt);
  equal(chat({ tools: [weather], parallel_tool_calls: false }).structured.calls?.maxCalls, 1);
  // `none`: the functions stay out of the prompt and nothing is read.
  const none = chat({ tools: [weather], tool_choice: "none" });
  deepStrictEqual(none.prompt, encodeChat(qwen, messages));
  equal(none.structured.calls, undefined);
});

Deno.test("tool_choice required or named constrains the call to the functions' schemas", () => {
  deepStrictEqual(guided({ tools: [weather, time], tool_choice: "required" }), {
    json: {
      type: "array",
      items: {
        anyOf: [
          callOf("get_weather", weather.function.parameters),
          callOf("get_time", {
            type: "object",
          }),
        ],
      },
      minItems: 1,
    },
  });
  deepStrictEqual(
    guided({ tools: [weather, time], tool_choice: "required", parallel_tool_calls: false }),
    {
      json: {
        anyOf: [
          callOf("get_weather", weather.function.parameters),
          callOf("get_time", { type: "object" }),
        ],
      },
    },
  );
  const named = chat({
    tools: [weather, time],
    tool_choice: { type: "function", function: { name: "get_weather" } },
  });
  deepStrictEqual(named.request(0).sampling_options.guided_decoding, {
    json: callOf("get_weather", weather.function.parameters),
  });
  equal(named.structured.guidedBy, "tool_choice");
  equal(named.structured.calls?.maxCalls, 1);
  // A model whose template shows no call format may still be made to call (constrained).
  ok(chat({ tools: [time], tool_choice: "required" }, plain).structured.guided);
});

Deno.test("what cannot be honoured is a 400 naming the field", () => {
  const refused = (body: Record<string, unknown>, param: string, text = qwen, isChat = true) =>
    throws(
      () =>
        parseJob(
          { model: "m", ...(isChat ? { messages } : { prompt: "x" }), ...body },
          isChat,
          text,
          limits,
        ),
      (e: unknown) => {
        ok(e instanceof EngineError && e.type === "InvalidArgument", String(e));
        const h = openAIError(e);
        equal(h.status, 400, h.message);
        equal(h.param, param, h.message);
        ok(h.message.startsWith(`${param}: `), h.message);
        return true;
      },
      JSON.stringify(body),
    );
  const named = (name: string) => ({ type: "function", function: { name } });
  refused({ tools: [weather], tool_choice: named("get_time") }, "tool_choice");
  refused({ tools: [weather], tool_choice: "sometimes" }, "tool_choice");
  refused({ tool_choice: "required" }, "tool_choice");
  refused({ tools: [weather], tool_choice: { type: "function" } }, "tool_choice");
  refused({ tools: [{ type: "function", function: { name: "bad name" } }] }, "tools");
  refused({ tools: [{ type: "code_interpreter" }] }, "tools");
  refused({ tools: [weather], parallel_tool_calls: "no" }, "parallel_tool_calls");
  // `auto` needs a call format the template shows; the plain default shows none.
  refused({ tools: [weather] }, "tools", plain);
  refused({ tools: [weather] }, "tools", qwen, false);
  refused({ response_format: { type: "xml" } }, "response_format");
  refused(
    { response_format: { type: "json_schema", json_schema: { schema: {} } } },
    "response_format",
  );
  refused(
    { response_format: { type: "json_schema", json_schema: { name: "x", schema: "{}" } } },
    "response_format",
  );
  refused(
    { tools: [weather], tool_choice: "required", response_format: { type: "json_object" } },
    "response_format",
  );
  refused({ functions: [weather.function] }, "functions");
  refused({ function_call: "auto" }, "function_call");
});
