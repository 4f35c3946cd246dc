/**
 * Calls constrained by `tool_choice` on the real fortune engine, whose output XGrammar holds to
 * the calls' schema. The grammar of `required` (a list of calls) allows `]` after every complete
 * call and a stop token right after it, and nothing else there; a named function's object allows
 * only the stop token after it. Through `serve` and the `openai` client, greedy: a `required`
 * reply that `max_tokens` cuts (fortune repeats calls) gives its complete calls as `tool_calls`,
 * each fitting its function, no content and finish `length`, the same whole and streamed, with no
 * empty chunk in the stream; a named call ends with the stop token: finish `tool_calls`.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import OpenAI from "openai";
import { specFiles } from "../../src/adapters/deno/file_source.ts";
import type { PreprocessedRequest } from "../../src/contract/types.ts";
import { Guides } from "../../src/engines/guided/guides.ts";
import { allows } from "../../src/gpu/token_mask_bits.ts";
import { structuredOutput } from "../../src/openai/structured.ts";
import { ChatTemplate } from "../../src/text/chat.ts";
import { loadText } from "../../src/text/load.ts";
import { assertValid } from "../support/json_schema.ts";
import { startServer } from "./server.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;
const QWEN3 = new URL("../fixtures/chat_templates/Qwen-Qwen3-0.6B.jinja", import.meta.url);

const PARAMETERS: Record<string, Record<string, unknown>> = {
  get_weather: {
    type: "object",
    properties: { city: { type: "string", minLength: 1, maxLength: 12 } },
    required: ["city"],
    additionalProperties: false,
  },
  get_time: {
    type: "object",
    properties: { timezone: { type: "string", enum: ["UTC", "CET"] } },
    required: ["timezone"],
    additionalProperties: false,
  },
};
const tools = Object.entries(PARAMETERS).map(([name, parameters]) => ({
  type: "function" as const,
  function: { name, parameters },
}));

Deno.test("the grammar of required lets the reply end after any complete call", async () => {
  const { tokenizer } = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "f" }));
  const template = new ChatTemplate(Deno.readTextFileSync(QWEN3));
  const guides = new Guides(() => Promise.resolve(tokenizer), tokenizer.vocabSize);
  const eos = tokenizer.eosTokenIds[0]!;
  const one = (t: string) => tokenizer.encode(t, { addSpecial: false })[0]!;
  const [close, comma] = [one("]"), one(",")];
  const guideOf = async (toolChoice: unknown) => {
    const guided = structuredOutput({ tools, tool_choice: toolChoice }, true, template).guided;
    const request: PreprocessedRequest = {
      model: "fortune",
      token_ids: [1],
      stop_conditions: {},
      sampling_options: { guided_decoding: { ...guided! } },
      output_options: {},
      eos_token_ids: [eos],
      annotations: [],
    };
    const guide = (await guides.guide(request))!;
    return async (text: string) => {
      const ids = tokenizer.encode(text, { addSpecial: false });
      await guide.prepare(ids);
      const mask = guide.nextMask(ids);
      return (id: number) => allows(mask, id);
    };
  };
  const call = (name: string, args: string) => `{"name": "${name}", "arguments": ${args}}`;
  const time = call("get_time", '{"timezone": "UTC"}');
  const weather = call("get_weather", '{"city": "Bern"}');
  const required = await guideOf("required");
  for (const calls of [[time], [time, weather], [weather, time, time]]) {
    const text = `[${calls.join(", ")}`;
    const after = await required(text);
    ok(after(close) && after(comma), `${text}: ] and , may follow`);
    ok(!after(eos), `${text}: no stop before ]`);
    const end = await required(`${text}]`);
    ok(end(eos), `${text}]: the stop token may follow`);
    deepStrictEqual(
      Array.from({ length: tokenizer.vocabSize }, (_, id) => id).filter(end),
      [eos],
      `${text}]: only the stop token`,
    );
    ok(!(await required(text.slice(0, -1)))(eos), "not inside a call");
  }
  const named = await guideOf({ type: "function", function: { name: "get_weather" } });
  const end = await named(weather);
  deepStrictEqual(Array.from({ length: tokenizer.vocabSize }, (_, id) => id).filter(end), [eos]);
});

Deno.test({
  name: "fortune through serve: a cut required reply keeps its calls; a named one ends tool_calls",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const server = await startServer();
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "x", maxRetries: 0 });
    const body = {
      model: "fortune",
      messages: [{ role: "user" as const, content: "Weather and time?" }],
      tools,
      tool_choice: "required" as const,
      max_tokens: 120,
      temperature: 0,
    };
    type Call = { name: string; arguments: string };
    const check = (calls: Call[], what: string) => {
      for (const c of calls) {
        ok(c.name in PARAMETERS, `${what}: ${c.name}`);
        assertValid(PARAMETERS[c.name]!, JSON.parse(c.arguments), `${what}: ${c.name} arguments`);
      }
    };
    try {
      const whole = await client.chat.completions.create(body);
      const choice = whole.choices[0]!;
      equal(choice.finish_reason, "length", JSON.stringify(choice.message));
      equal(choice.message.content, null);
      const calls = (choice.message.tool_calls ?? []).map((c) =>
        (c as OpenAI.Chat.ChatCompletionMessageFunctionToolCall).function
      );
      ok(calls.length >= 1, "a complete call before the cut");
      check(calls, "whole");

      const streamed: Call[] = [];
      const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
      for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) {
        chunks.push(chunk);
        for (const d of chunk.choices[0]!.delta.tool_calls ?? []) {
          const c = streamed[d.index] ??= { name: "", arguments: "" };
          c.name += d.function?.name ?? "";
          c.arguments += d.function?.arguments ?? "";
        }
      }
      deepStrictEqual(streamed, calls, "greedy: streamed as whole");
      equal(chunks.at(-1)!.choices[0]!.finish_reason, "length");
      chunks.slice(1, -1).forEach((c, i) =>
        ok(c.choices[0]!.delta.tool_calls, `chunk ${i + 1}: ${JSON.stringify(c.choices[0])}`)
      );

      const named = await client.chat.completions.create({
        ...body,
        tool_choice: { type: "function", function: { name: "get_weather" } },
      });
      equal(named.choices[0]!.finish_reason, "tool_calls");
      const one = (named.choices[0]!.message.tool_calls ?? []).map((c) =>
        (c as OpenAI.Chat.ChatCompletionMessageFunctionToolCall).function
      );
      equal(one.length, 1);
      equal(one[0]!.name, "get_weather");
      check(one, "named");
    } finally {
      await server.stop();
    }
  },
});
