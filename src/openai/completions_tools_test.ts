/**
 * `openModel`'s `chat.completions.create` and `completions.create` (the `ChatCompletions` and
 * `Completions` a `KilnModel` holds) with tools and `response_format`, on an engine whose reply
 * the test writes: the whole answer and the chunks agree on `tool_calls` and `finish_reason`, the
 * constraint reaches the engine as `guided_decoding`, and an engine that refuses it rejects
 * `create` with an `InvalidArgument` naming the field, streaming or not.
 */
import { deepStrictEqual, match, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { specFiles } from "../adapters/deno/file_source.ts";
import { EngineError } from "../contract/errors.ts";
import { ChatTemplate } from "../text/chat.ts";
import { loadText, type ModelText } from "../text/load.ts";
import { ScriptedEngine, type ScriptedEngineOptions } from "../../test/support/scripted_engine.ts";
import {
  type ChatCompletionChunk,
  type ChatCompletionRequest,
  ChatCompletions,
  Completions,
} from "./completions.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;
const NEMO = new URL(
  "../../test/fixtures/chat_templates/mistralai-Mistral-Nemo-Instruct-2407.jinja",
  import.meta.url,
);
const fortune = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" }));
/** Fortune's tokenizer under Mistral Nemo's template: `[TOOL_CALLS][...]` calls. */
const nemo: ModelText = {
  tokenizer: fortune.tokenizer,
  chat: new ChatTemplate(Deno.readTextFileSync(NEMO)),
};

function target(options: ScriptedEngineOptions = {}) {
  const engine = new ScriptedEngine("nemo", nemo.tokenizer, options);
  const t = { engine, text: nemo, model: "nemo", contextLength: 4096 };
  return { engine, chat: new ChatCompletions(t), completions: new Completions(t) };
}

const tools: ChatCompletionRequest["tools"] = [
  { type: "function", function: { name: "get_time", parameters: { type: "object" } } },
];
const body = {
  messages: [{ role: "user", content: "Time?" }],
  tools,
} satisfies ChatCompletionRequest;

Deno.test("openModel chat: tool calls whole and streamed, ids as the template takes them", async () => {
  const t = target();
  t.engine.reply = 'One moment.[TOOL_CALLS][{"name": "get_time", "arguments": {"tz": "UTC"}}]';
  const whole = await t.chat.create(body);
  const message = whole.choices[0]!.message;
  equal(message.content, "One moment.");
  equal(message.tool_calls?.length, 1);
  const call = message.tool_calls![0]!;
  // Mistral's templates take only 9-letter call ids back.
  match(call.id, /^[A-Za-z0-9]{9}$/);
  deepStrictEqual(call.function, { name: "get_time", arguments: '{"tz":"UTC"}' });
  equal(whole.choices[0]!.finish_reason, "tool_calls");

  const chunks: ChatCompletionChunk[] = [];
  for await (const c of await t.chat.create({ ...body, stream: true })) chunks.push(c);
  const deltas = chunks.flatMap((c) => c.choices[0]!.delta.tool_calls ?? []);
  equal(deltas.length, 2);
  equal(deltas[0]!.function.name, "get_time");
  equal(deltas[0]!.function.arguments, "");
  match(deltas[0]!.id ?? "", /^[A-Za-z0-9]{9}$/);
  deepStrictEqual(deltas[1], { index: 0, function: { arguments: '{"tz":"UTC"}' } });
  equal(chunks.map((c) => c.choices[0]!.delta.content ?? "").join(""), "One moment.");
  equal(chunks.at(-1)!.choices[0]!.finish_reason, "tool_calls");
  ok(chunks.slice(0, -1).every((c) => c.choices[0]!.finish_reason === null));
});

Deno.test("openModel: response_format and required reach the engine as guided_decoding", async () => {
  const t = target();
  t.engine.reply = '{"ok": true}';
  const format = { type: "json_schema" as const, json_schema: { name: "ok", schema: {} } };
  const r = await t.completions.create({ prompt: "x", response_format: format });
  equal(r.choices[0]!.text, '{"ok": true}');
  deepStrictEqual(t.engine.requests[0]!.sampling_options.guided_decoding, { json: {} });
  t.engine.reply = '[{"name": "get_time", "arguments": {}}]';
  const chunks: ChatCompletionChunk[] = [];
  for await (const c of await t.chat.create({ ...body, tool_choice: "required", stream: true })) {
    chunks.push(c);
  }
  equal(chunks.flatMap((c) => c.choices[0]!.delta.tool_calls ?? []).length, 2);
  equal(chunks.at(-1)!.choices[0]!.finish_reason, "tool_calls");
  equal(
    (t.engine.requests[1]!.sampling_options.guided_decoding?.json as { type: string }).type,
    "array",
  );
});

Deno.test("openModel: an engine that refuses guided_decoding rejects create, naming the field", async () => {
  const t = target({ refuseGuided: true });
  const naming = (field: string) => (e: unknown) =>
    e instanceof EngineError && e.type === "InvalidArgument" &&
    e.message.startsWith(`${field}: the engine refused the output constraint`);
  const json = { type: "json_object" as const };
  for (const stream of [false, true] as const) {
    await rejects(
      t.chat.create({ ...body, response_format: json, stream } as never),
      naming("response_format"),
    );
    await rejects(
      t.chat.create(
        {
          ...body,
          tool_choice: { type: "function", function: { name: "get_time" } },
          stream,
        } as never,
      ),
      naming("tool_choice"),
    );
    await rejects(
      t.completions.create({ prompt: "x", response_format: json, stream } as never),
      naming("response_format"),
    );
  }
  await rejects(
    t.chat.create({ ...body, tool_choice: { type: "function", function: { name: "nope" } } }),
    (e) => e instanceof EngineError && e.message.startsWith("tool_choice: "),
  );
});

Deno.test("openModel chat: a call to a function not offered, or with arguments not an object, is content", async () => {
  const t = target();
  const replies = [
    '[TOOL_CALLS][{"name": "get_stock", "arguments": {"symbol": "X"}}]',
    '[TOOL_CALLS][{"name": "get_time", "arguments": [1, 2]}]',
    '[TOOL_CALLS][{"name": "get_time", "arguments": "UTC"}]',
    '[TOOL_CALLS][{"name": "get_time"}]',
  ];
  for (const reply of replies) {
    t.engine.reply = reply;
    const whole = await t.chat.create(body);
    equal(whole.choices[0]!.message.content, reply);
    equal(whole.choices[0]!.message.tool_calls, undefined, reply);
    equal(whole.choices[0]!.finish_reason, "stop");
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of await t.chat.create({ ...body, stream: true })) chunks.push(c);
    equal(chunks.flatMap((c) => c.choices[0]!.delta.tool_calls ?? []).length, 0, reply);
    equal(chunks.map((c) => c.choices[0]!.delta.content ?? "").join(""), reply);
    equal(chunks.at(-1)!.choices[0]!.finish_reason, "stop");
  }
});

Deno.test("openModel chat: the same call twice is two calls with their own ids", async () => {
  const t = target();
  t.engine.reply = '[TOOL_CALLS][{"name": "get_time", "arguments": {"tz": "UTC"}}, ' +
    '{"name": "get_time", "arguments": {"tz": "UTC"}}]';
  const calls = (await t.chat.create(body)).choices[0]!.message.tool_calls ?? [];
  deepStrictEqual(calls.map((c) => c.function), [
    { name: "get_time", arguments: '{"tz":"UTC"}' },
    { name: "get_time", arguments: '{"tz":"UTC"}' },
  ]);
  ok(calls[0]!.id !== calls[1]!.id, "distinct ids");
  const one = await t.chat.create({ ...body, parallel_tool_calls: false });
  equal(one.choices[0]!.message.tool_calls?.length, 1);
});
