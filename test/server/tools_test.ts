/**
 * Function calls and structured output through `serve` and the official `openai` client, on an
 * engine whose reply the test writes (fortune's tokenizer, Qwen3's template: `<tool_call>` JSON):
 * the whole response, the raw stream and the client's own accumulation of the stream agree on
 * `tool_calls`, content and `finish_reason` (a call cut by `max_tokens` is dropped, the text before
 * it kept); `required` and named functions reach the engine as `guided_decoding` JSON Schemas, as
 * does `response_format`; an engine that refuses `guided_decoding` gets the client a 400 naming
 * the field, streaming or not.
 */
import { deepStrictEqual, match, ok, rejects, strictEqual as equal } from "node:assert/strict";
import OpenAI from "openai";
import { encodeChat } from "../../src/text/load.ts";
import { qwen } from "../support/qwen_text.ts";
import { serveQwen } from "../support/qwen_server.ts";
import { ScriptedEngine, type ScriptedEngineOptions } from "../support/scripted_engine.ts";

const serve = (options: ScriptedEngineOptions = {}) =>
  serveQwen(new ScriptedEngine("qwen", qwen.tokenizer, options));

const weather = {
  type: "function" as const,
  function: {
    name: "get_weather",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};
const time = { type: "function" as const, function: { name: "get_time", parameters: {} } };
const messages = [{ role: "user" as const, content: "Weather and time in Zürich?" }];
const base = { model: "qwen", messages, tools: [weather, time] };
const TWO_CALLS = "Let me check.\n<tool_call>\n" +
  '{"name": "get_weather", "arguments": {"city": "Zürich"}}\n</tool_call>\n<tool_call>\n' +
  '{"name": "get_time", "arguments": {}}\n</tool_call>';

type Body = OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming;
/** The whole response, then the client's accumulation of the stream of the same request. */
const both = async (client: OpenAI, body: Body) => [
  await client.chat.completions.create(body),
  await client.chat.completions.stream({ ...body, stream: true }).finalChatCompletion(),
];

type Calls = OpenAI.Chat.Completions.ChatCompletionMessageToolCall[];
/** Calls without their random ids, arguments parsed. */
const calls = (list: Calls | undefined) =>
  (list ?? []).map((c) => {
    equal(c.type, "function");
    match(c.id, /^call_[A-Za-z0-9]{24}$/);
    const f = (c as { function: { name: string; arguments: string } }).function;
    return { name: f.name, arguments: JSON.parse(f.arguments) };
  });

Deno.test({
  name: "tool calls: whole, streamed and the client's accumulation agree",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const s = await serve();
    s.engine.reply = TWO_CALLS;
    try {
      const whole = await s.client.chat.completions.create(base);
      const message = whole.choices[0]!.message;
      equal(message.content, "Let me check.");
      const want = [
        { name: "get_weather", arguments: { city: "Zürich" } },
        { name: "get_time", arguments: {} },
      ];
      deepStrictEqual(calls(message.tool_calls), want);
      equal(whole.choices[0]!.finish_reason, "tool_calls");
      // The functions reached the prompt through the template; nothing was constrained.
      const request = s.engine.requests[0]!;
      deepStrictEqual(request.token_ids, encodeChat(qwen, messages, { tools: base.tools }));
      equal(request.sampling_options.guided_decoding, undefined);

      const stream = await s.client.chat.completions.create({ ...base, stream: true });
      let content = "";
      const deltas: { index: number; id?: string; name?: string; args: string }[] = [];
      let finish: string | null = null;
      for await (const chunk of stream) {
        const c = chunk.choices[0]!;
        content += c.delta.content ?? "";
        for (const d of c.delta.tool_calls ?? []) {
          deltas.push({
            index: d.index,
            ...(d.id ? { id: d.id } : {}),
            ...(d.function?.name ? { name: d.function.name } : {}),
            args: d.function?.arguments ?? "",
          });
        }
        if (c.finish_reason) finish = c.finish_reason;
      }
      equal(content, "Let me check.");
      equal(finish, "tool_calls");
      // Per call: a header (id, name, no arguments), then its arguments.
      equal(deltas.length, 4);
      for (const [k, index] of [[0, 0], [2, 1]] as const) {
        const [header, args] = [deltas[k]!, deltas[k + 1]!];
        equal(header.index, index);
        match(header.id ?? "", /^call_/);
        equal(header.name, want[index]!.name);
        equal(header.args, "");
        deepStrictEqual({ index: args.index, id: args.id, name: args.name }, {
          index,
          id: undefined,
          name: undefined,
        });
        deepStrictEqual(JSON.parse(args.args), want[index]!.arguments);
      }

      const final = await s.client.chat.completions.stream(base).finalChatCompletion();
      equal(final.choices[0]!.message.content, "Let me check.");
      deepStrictEqual(calls(final.choices[0]!.message.tool_calls), want);
      equal(final.choices[0]!.finish_reason, "tool_calls");

      const one = await s.client.chat.completions.create({ ...base, parallel_tool_calls: false });
      deepStrictEqual(calls(one.choices[0]!.message.tool_calls), want.slice(0, 1));
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name: "tool calls: malformed or unasked-for calls are text; a call max_tokens cut is dropped",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const s = await serve();
    try {
      const bad = '<tool_call>\n{"name": "get_time", "arguments": {]}\n</tool_call>';
      s.engine.reply = bad;
      for (const r of await both(s.client, base)) {
        equal(r.choices[0]!.message.content, bad);
        equal(r.choices[0]!.message.tool_calls?.length ?? 0, 0);
        equal(r.choices[0]!.finish_reason, "stop");
      }
      // Cut by max_tokens inside the first call: the text before it is the content, the cut
      // call is neither content nor a call, and the finish says why (test/server/clients_test.ts
      // has cuts after complete calls).
      s.engine.reply = TWO_CALLS;
      for (const r of await both(s.client, { ...base, max_tokens: 30 })) {
        equal(r.choices[0]!.finish_reason, "length");
        equal(r.choices[0]!.message.content, "Let me check.");
        equal(r.choices[0]!.message.tool_calls?.length ?? 0, 0);
      }
      // Without tools the reply is not read for calls.
      const plain = await s.client.chat.completions.create({ model: "qwen", messages });
      equal(plain.choices[0]!.message.content, TWO_CALLS);
      equal(plain.choices[0]!.finish_reason, "stop");
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name: "tool calls: a conversation with calls and results renders as the template has it",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const s = await serve();
    s.engine.reply = "It is 21 °C and clear.";
    try {
      const call = {
        id: "call_1",
        type: "function" as const,
        function: { name: "get_weather", arguments: '{"city": "Zürich"}' },
      };
      const r = await s.client.chat.completions.create({
        ...base,
        messages: [
          ...messages,
          { role: "assistant", content: null, tool_calls: [call] },
          { role: "tool", tool_call_id: "call_1", content: '{"temp": 21}' },
        ],
      });
      equal(r.choices[0]!.message.content, "It is 21 °C and clear.");
      equal(r.choices[0]!.finish_reason, "stop");
      const rendered = encodeChat(qwen, [
        ...messages,
        {
          role: "assistant",
          content: "",
          tool_calls: [{
            ...call,
            function: { name: "get_weather", arguments: { city: "Zürich" } },
          }],
        },
        { role: "tool", tool_call_id: "call_1", content: '{"temp": 21}' },
      ], { tools: base.tools });
      deepStrictEqual(s.engine.requests[0]!.token_ids, rendered);
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name: "required, named and response_format reach the engine as guided_decoding",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const s = await serve();
    try {
      s.engine.reply = '[{"name": "get_time", "arguments": {}}]';
      const required = await s.client.chat.completions.create({ ...base, tool_choice: "required" });
      deepStrictEqual(calls(required.choices[0]!.message.tool_calls), [
        { name: "get_time", arguments: {} },
      ]);
      equal(required.choices[0]!.message.content, null);
      equal(required.choices[0]!.finish_reason, "tool_calls");
      const json = s.engine.requests[0]!.sampling_options.guided_decoding?.json as {
        type: string;
        items: { anyOf: unknown[] };
      };
      equal(json.type, "array");
      equal(json.items.anyOf.length, 2);

      s.engine.reply = '{"name": "get_weather", "arguments": {"city": "Bern"}}';
      const named = await s.client.chat.completions.stream({
        ...base,
        tool_choice: { type: "function", function: { name: "get_weather" } },
      }).finalChatCompletion();
      deepStrictEqual(calls(named.choices[0]!.message.tool_calls), [
        { name: "get_weather", arguments: { city: "Bern" } },
      ]);
      deepStrictEqual(s.engine.requests[1]!.sampling_options.guided_decoding, {
        json: {
          type: "object",
          properties: {
            name: { type: "string", enum: ["get_weather"] },
            arguments: weather.function.parameters,
          },
          required: ["name", "arguments"],
          additionalProperties: false,
        },
      });

      const schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] };
      s.engine.reply = '{"n": 3}';
      const format = {
        type: "json_schema" as const,
        json_schema: { name: "n", schema, strict: true },
      };
      for (const r of await both(s.client, { model: "qwen", messages, response_format: format })) {
        deepStrictEqual(JSON.parse(r.choices[0]!.message.content!), { n: 3 });
        deepStrictEqual(s.engine.requests.at(-1)!.sampling_options.guided_decoding, {
          json: schema,
        });
      }
      const text = await s.client.completions.create({
        model: "qwen",
        prompt: "n:",
        response_format: { type: "json_object" },
      } as OpenAI.CompletionCreateParamsNonStreaming);
      equal(text.choices[0]!.text, '{"n": 3}');
      deepStrictEqual(s.engine.requests.at(-1)!.sampling_options.guided_decoding, {
        json: { type: "object" },
      });
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name: "an engine that refuses guided_decoding: 400 naming the field, streaming or not",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const s = await serve({ refuseGuided: true });
    s.engine.reply = "free text";
    try {
      const refusal = (param: string) => (e: unknown) => {
        ok(e instanceof OpenAI.BadRequestError, String(e));
        equal(e.param, param, e.message);
        equal(e.status, 400);
        ok(e.message.includes(`${param}: the engine refused the output constraint`), e.message);
        ok(e.message.includes("guided_decoding"), e.message);
        return true;
      };
      for (const stream of [false, true]) {
        await rejects(
          s.client.chat.completions.create({
            model: "qwen",
            messages,
            stream,
            response_format: { type: "json_object" },
          }),
          refusal("response_format"),
        );
        await rejects(
          s.client.chat.completions.create({ ...base, stream, tool_choice: "required" }),
          refusal("tool_choice"),
        );
      }
      // Unconstrained calls do not ask the engine for anything it refuses.
      s.engine.reply = TWO_CALLS;
      const auto = await s.client.chat.completions.create({ ...base, stream: false });
      equal(auto.choices[0]!.message.tool_calls?.length, 2);
    } finally {
      await s.close();
    }
  },
});
