/**
 * `responses.create` in process (what `KilnModel.responses` is), on an engine whose reply the
 * test writes under Qwen3's template (`<think>` reasoning, `<tool_call>` calls): the event
 * sequence item by item (added, deltas, done) with consecutive sequence numbers, the same output
 * whole and streamed; `response.incomplete` for a reply cut by `max_output_tokens` and for a
 * cancelled one, `response.failed` and the error for an engine that fails; `text.format`
 * reaching the engine as `guided_decoding` (and its refusal naming `text.format`); and
 * `previous_response_id` continuing a kept conversation, `store: false` keeping none.
 */
import { deepStrictEqual, match, ok, rejects, strictEqual as equal } from "node:assert/strict";
import type { GenerateContext } from "../contract/engine.ts";
import { EngineError } from "../contract/errors.ts";
import type { LLMEngineOutput, PreprocessedRequest } from "../contract/types.ts";
import { qwen } from "../../test/support/qwen_text.ts";
import { ScriptedEngine, type ScriptedEngineOptions } from "../../test/support/scripted_engine.ts";
import { APIUserAbortError } from "./abort_error.ts";
import { type ResponseObject, Responses, type ResponseStreamEvent } from "./responses.ts";

/** Fails the request after `after` tokens. */
class FailingEngine extends ScriptedEngine {
  after = 3;
  override async *generate(
    request: PreprocessedRequest,
    ctx: GenerateContext,
  ): AsyncGenerator<LLMEngineOutput> {
    let n = 0;
    for await (const out of super.generate(request, ctx)) {
      if (n++ === this.after) throw new EngineError("Unknown", "the GPU fell over");
      yield out;
    }
  }
}

function setup(
  options: ScriptedEngineOptions = {},
  engine = new ScriptedEngine("qwen", qwen.tokenizer, options),
) {
  const responses = new Responses({ engine, text: qwen, model: "qwen", contextLength: 4096 });
  return { engine, responses };
}

const CALL = '{"name": "get_weather", "arguments": {"city": "Bern"}}';
const REPLY =
  `<think>Need the weather.</think>\n\nLet me check.\n<tool_call>\n${CALL}\n</tool_call>`;
const tools = [{
  type: "function" as const,
  name: "get_weather",
  parameters: { type: "object", properties: { city: { type: "string" } } },
}];

async function collect(events: AsyncIterable<ResponseStreamEvent>): Promise<ResponseStreamEvent[]> {
  const all: ResponseStreamEvent[] = [];
  for await (const e of events) all.push(e);
  return all;
}

/**
 * Check a stream's structure (numbers from 0, each item's events between its `added` and its
 * `done` naming its id and index, its deltas adding up to its done text) and give its event
 * types, each run of deltas as one `…delta*`.
 */
function shape(events: ResponseStreamEvent[]): string[] {
  events.forEach((e, i) => equal(e.sequence_number, i));
  const items = new Map<number, { id: string; text: string }>();
  const types: string[] = [];
  for (const e of events) {
    const index = e.output_index as number;
    if (e.type === "response.output_item.added") {
      equal(items.has(index), false);
      items.set(index, { id: (e.item as { id: string }).id, text: "" });
    } else if (index !== undefined && e.type !== "response.output_item.done") {
      equal(e.item_id, items.get(index)?.id, `${e.type} names its item`);
    }
    if (e.type.endsWith(".delta")) items.get(index)!.text += e.delta as string;
    if (e.type.endsWith("text.done")) equal(e.text, items.get(index)!.text);
    if (e.type.endsWith("arguments.done")) equal(e.arguments, items.get(index)!.text);
    const type = e.type.endsWith(".delta") ? `${e.type}*` : e.type;
    if (types.at(-1) !== type) types.push(type);
  }
  const last = events.at(-1)!.response as ResponseObject;
  const done = events.filter((e) => e.type === "response.output_item.done").map((e) => e.item);
  deepStrictEqual(last.output, done);
  return types;
}

const ITEM = (kind: string, deltas: string[]) => [
  "response.output_item.added",
  ...(kind === "call" ? [] : ["response.content_part.added"]),
  ...deltas,
  ...(kind === "call" ? [] : ["response.content_part.done"]),
  "response.output_item.done",
];

/** The output with its random ids taken out. */
const idless = (r: ResponseObject) =>
  r.output.map((item) => ({ ...item, id: "", ...("call_id" in item ? { call_id: "" } : {}) }));

Deno.test("responses.create: reasoning, text and a call as items, the same whole and streamed", async () => {
  const { engine, responses } = setup();
  engine.reply = REPLY;
  const whole = await responses.create({ input: "Weather in Bern?", tools });
  equal(whole.status, "completed");
  deepStrictEqual(whole.output.map((o) => o.type), ["reasoning", "message", "function_call"]);
  deepStrictEqual(whole.output[0], {
    ...whole.output[0]!,
    content: [{ type: "reasoning_text", text: "Need the weather." }],
    summary: [],
  });
  const [, message, call] = whole.output;
  deepStrictEqual(message?.type === "message" && message.content, [
    { type: "output_text", text: "Let me check.", annotations: [] },
  ]);
  ok(call?.type === "function_call");
  equal(call.name, "get_weather");
  deepStrictEqual(JSON.parse(call.arguments), { city: "Bern" });
  match(call.call_id, /^call_/);
  match(call.id, /^fc_/);
  match(whole.id, /^resp_/);
  const u = whole.usage!;
  equal(u.total_tokens, u.input_tokens + u.output_tokens);
  ok(u.output_tokens_details.reasoning_tokens > 0);
  ok(u.output_tokens_details.reasoning_tokens < u.output_tokens);

  const events = await collect(
    await responses.create({ input: "Weather in Bern?", tools, stream: true }),
  );
  deepStrictEqual(shape(events), [
    "response.created",
    "response.in_progress",
    ...ITEM("reasoning", ["response.reasoning_text.delta*", "response.reasoning_text.done"]),
    ...ITEM("message", ["response.output_text.delta*", "response.output_text.done"]),
    ...ITEM("call", [
      "response.function_call_arguments.delta*",
      "response.function_call_arguments.done",
    ]),
    "response.completed",
  ]);
  const last = events.at(-1)!.response as ResponseObject;
  deepStrictEqual(idless(last), idless(whole));
  deepStrictEqual(last.usage, whole.usage);
  equal((events[0]!.response as ResponseObject).status, "in_progress");
});

Deno.test("responses.create: a reply cut by max_output_tokens is incomplete, item and response", async () => {
  const { engine, responses } = setup();
  engine.reply = "A long answer that goes on and on.";
  const whole = await responses.create({ input: "Talk.", max_output_tokens: 5 });
  equal(whole.status, "incomplete");
  deepStrictEqual(whole.incomplete_details, { reason: "max_output_tokens" });
  equal(whole.output[0]?.status, "incomplete");
  equal(whole.usage?.output_tokens, 5);
  equal(whole.max_output_tokens, 5);
  const events = await collect(
    await responses.create({ input: "Talk.", max_output_tokens: 5, stream: true }),
  );
  equal(events.at(-1)?.type, "response.incomplete");
  equal((events.at(-1)!.response as ResponseObject).status, "incomplete");
});

Deno.test("responses.create: an empty reply is one empty message", async () => {
  const { engine, responses } = setup();
  engine.reply = "";
  const whole = await responses.create({ input: "Say nothing." });
  deepStrictEqual(idless(whole), [{
    type: "message",
    id: "",
    role: "assistant",
    status: "completed",
    content: [{ type: "output_text", text: "", annotations: [] }],
  }]);
});

Deno.test("responses.create: an engine that fails ends the stream with response.failed, then throws", async () => {
  const engine = new FailingEngine("qwen", qwen.tokenizer);
  engine.reply = "Some words that never all come.";
  const { responses } = setup({}, engine);
  const events: ResponseStreamEvent[] = [];
  await rejects(async () => {
    for await (const e of await responses.create({ input: "Hi", stream: true })) events.push(e);
  }, /the GPU fell over/);
  const last = events.at(-1)!;
  equal(last.type, "response.failed");
  const r = last.response as ResponseObject;
  equal(r.status, "failed");
  deepStrictEqual(r.error, { code: "server_error", message: "the GPU fell over" });
  equal(r.output[0]?.status, "incomplete");
  await rejects(responses.create({ input: "Hi" }), /the GPU fell over/);
  // A failed response is not kept.
  await rejects(responses.retrieve(r.id), /not found/);
});

Deno.test("responses.create: a cancelled stream ends response.incomplete, status cancelled; a whole one rejects", async () => {
  const { engine, responses } = setup();
  engine.reply = "Many words here, one at a time, for a while.";
  const abort = new AbortController();
  const events: ResponseStreamEvent[] = [];
  for await (const e of await responses.create({ input: "Hi", stream: true }, abort)) {
    events.push(e);
    if (e.type === "response.output_text.delta") abort.abort();
  }
  equal(events.at(-1)?.type, "response.incomplete");
  equal((events.at(-1)!.response as ResponseObject).status, "cancelled");
  await rejects(
    responses.create({ input: "Hi" }, { signal: AbortSignal.abort() }),
    APIUserAbortError,
  );
});

Deno.test("responses.create: text.format is the engine's guided_decoding; a refusal names text.format", async () => {
  const { engine, responses } = setup();
  const schema = { type: "object", properties: { a: { type: "integer" } }, required: ["a"] };
  engine.reply = '{"a": 1}';
  const format = { type: "json_schema" as const, name: "A", schema };
  const whole = await responses.create({ input: "A?", text: { format } });
  deepStrictEqual(engine.requests.at(-1)?.sampling_options.guided_decoding, { json: schema });
  const m = whole.output[0]!;
  deepStrictEqual(m.type === "message" && JSON.parse(m.content[0]!.text), { a: 1 });
  deepStrictEqual(whole.text, { format });

  const refusing = setup({ refuseGuided: true }).responses;
  for (const stream of [false, true]) {
    await rejects(
      refusing.create({ input: "A?", text: { format }, stream } as { input: string }),
      (e: unknown) =>
        e instanceof EngineError && e.param === "text.format" && /^text\.format: /.test(e.message),
    );
  }
});

Deno.test("responses.create: previous_response_id continues the kept conversation; store false keeps none", async () => {
  const { engine, responses } = setup();
  engine.reply = "Hello Ada.";
  const first = await responses.create({ input: "My name is Ada.", instructions: "Be brief." });
  engine.reply = "Ada.";
  const second = await responses.create({ previous_response_id: first.id, input: "My name?" });
  equal(second.previous_response_id, first.id);
  const prompt = qwen.tokenizer.decode(engine.requests.at(-1)!.token_ids, {
    skipSpecial: false,
  });
  match(prompt, /My name is Ada\.[\s\S]*Hello Ada\.[\s\S]*My name\?/);
  // `instructions` are not carried on (OpenAI's rule).
  equal(prompt.includes("Be brief."), false);
  // Three turns deep: the whole chain comes back.
  await responses.create({ previous_response_id: second.id, input: "Again?" });
  match(
    qwen.tokenizer.decode(engine.requests.at(-1)!.token_ids, { skipSpecial: false }),
    /My name is Ada\.[\s\S]*Hello Ada\.[\s\S]*My name\?[\s\S]*Ada\.[\s\S]*Again\?/,
  );
  deepStrictEqual(await responses.retrieve(first.id), first);

  const unkept = await responses.create({ input: "Forget me.", store: false });
  equal(unkept.store, false);
  await rejects(
    responses.create({ previous_response_id: unkept.id, input: "Still there?" }),
    (e: unknown) =>
      e instanceof EngineError && e.param === "previous_response_id" &&
      e.message === `Previous response with id '${unkept.id}' not found.`,
  );
});
