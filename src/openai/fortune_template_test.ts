/**
 * The embedded fortune model's chat template (`models/fortune/tokenizer_config.json`): it teaches
 * the `<tool_call>` convention, so a chat request with tools and `tool_choice: "auto"` is read
 * for calls instead of refused; its prompt starts with one `<bos>` token and each assistant turn
 * ends with `<eos>` (the ids fortune was trained with); a call it renders back reads as the same
 * call; and a whole tool round trip (OpenAI's `get_weather` example: system, tools, user, the
 * assistant's call, the tool's result) fits fortune's 1,024-token context with room for the
 * answer.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { specFiles } from "../adapters/deno/file_source.ts";
import { loadText } from "../text/load.ts";
import { parseJob } from "./requests.ts";
import { parseToolCalls, TOOL_CALL_CONVENTIONS } from "./tool_calls.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;
const fortune = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" }));
const CONTEXT = 1024;
const limits = { maxN: 8, contextLength: CONTEXT, maxLogprobs: 20 };
const [BOS, EOS] = [256, 257];

/** The function of OpenAI's function-calling guide, as the Chat Completions API takes it. */
const GET_WEATHER = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Get current temperature for a given location.",
    parameters: {
      type: "object",
      properties: {
        location: { type: "string", description: "City and country e.g. Bogotá, Colombia" },
      },
      required: ["location"],
      additionalProperties: false,
    },
    strict: true,
  },
};
const CALL = {
  id: "call_12345xyz",
  type: "function",
  function: { name: "get_weather", arguments: '{"location":"Paris, France"}' },
};
const ROUND_TRIP = [
  { role: "system", content: "You are a helpful assistant." },
  { role: "user", content: "What is the weather like in Paris today?" },
  { role: "assistant", content: null, tool_calls: [CALL] },
  { role: "tool", tool_call_id: CALL.id, content: "14°C, clear" },
];
const chat = (messages: unknown[], extra: Record<string, unknown> = {}) =>
  parseJob({ model: "fortune", messages, tools: [GET_WEATHER], ...extra }, true, fortune, limits);

Deno.test("fortune's template teaches <tool_call>: tools with auto are read for calls", () => {
  ok(!fortune.chat.isDefault);
  const job = chat(ROUND_TRIP.slice(0, 2));
  equal(job.structured.calls?.convention, TOOL_CALL_CONVENTIONS.get("<tool_call>"));
  ok(job.request(0).sampling_options.guided_decoding === undefined, "auto is unconstrained");
  const prompt = fortune.tokenizer.decode(job.prompt);
  ok(prompt.includes('"name":"get_weather"') && prompt.includes("<tool_call>"), prompt);
  ok(prompt.endsWith("user: What is the weather like in Paris today?\nassistant: "), prompt);
});

Deno.test("fortune's prompt: one <bos> first, <eos> after each assistant turn, calls read back", () => {
  const ids = chat(ROUND_TRIP).prompt;
  equal(ids[0], BOS);
  equal(ids.filter((id) => id === BOS).length, 1, "no second BOS");
  equal(ids.filter((id) => id === EOS).length, 1, "one assistant turn, one EOS");
  // The assistant's turn as rendered, between its header and its EOS, is the call it made.
  const text = fortune.tokenizer.decode(ids.slice(0, ids.indexOf(EOS)));
  const turn = text.slice(text.lastIndexOf("assistant: ") + "assistant: ".length);
  const read = parseToolCalls(TOOL_CALL_CONVENTIONS.get("<tool_call>")!, turn);
  equal(read.content, "");
  deepStrictEqual(read.calls, [{ name: "get_weather", arguments: CALL.function.arguments }]);
});

Deno.test("a tool round trip fits fortune's context with room for the answer", () => {
  const first = chat(ROUND_TRIP.slice(0, 2)).prompt.length;
  const whole = chat(ROUND_TRIP);
  const room = CONTEXT - whole.prompt.length;
  console.log(`  get_weather round trip: first turn ${first} tokens, whole ${whole.prompt.length}`);
  // Byte-level: a token per UTF-8 byte, so the bound is on bytes of rendered text.
  ok(room >= 400, `only ${room} tokens left for the answer`);
  equal(whole.request(0).stop_conditions.max_tokens, room, "the answer may use the rest");
});
