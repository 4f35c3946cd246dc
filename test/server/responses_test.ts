/**
 * `POST /v1/responses` driven by the `openai` npm client as its docs show it
 * (`client.responses.create`, whole and `stream: true`, and `client.responses.stream`, whose
 * accumulator checks every event against the items it has seen). Over sockets on a server whose
 * engine's reply the test writes under Qwen3's template: reasoning, text and a function call as
 * output items, the conversation continued by `previous_response_id` with the call's output,
 * `text.format` json_schema reaching the engine, `GET /v1/responses/{id}`, a 404 for an id not
 * kept and 400s naming the field; the requests counted in `dynamo_frontend_requests_total`; a
 * drain that cuts a stream ends it with `response.failed`. And
 * on a real `serve` of the fortune model: text, streamed text, and JSON that validates against a
 * schema.
 */
import { deepStrictEqual, match, ok, rejects, strictEqual as equal } from "node:assert/strict";
import OpenAI from "openai";
import type { GenerateContext } from "../../src/contract/engine.ts";
import type { LLMEngineOutput, PreprocessedRequest } from "../../src/contract/types.ts";
import { assertValid, SCHEMA } from "../support/json_schema.ts";
import { qwen } from "../support/qwen_text.ts";
import { serveQwen } from "../support/qwen_server.ts";
import { ScriptedEngine } from "../support/scripted_engine.ts";
import { startServer } from "./server.ts";

const CALL = '{"name": "get_weather", "arguments": {"city": "Bern"}}';
const WEATHER = { type: "object", properties: { a: { type: "integer" } }, required: ["a"] };
/** The reply: JSON when constrained, a closing sentence after a tool's output, else a call. */
function reply(r: PreprocessedRequest): string {
  if (r.sampling_options.guided_decoding) return '{"a": 7}';
  const prompt = qwen.tokenizer.decode(r.token_ids, { skipSpecial: false });
  if (prompt.includes("<tool_response>")) return "<think>It said sunny.</think>\n\nSunny in Bern.";
  return `<think>Need the weather.</think>\n\nLet me check.\n<tool_call>\n${CALL}\n</tool_call>`;
}

/** Stops after `holdAfter` tokens until its request is cut (when set). */
class HoldingEngine extends ScriptedEngine {
  holdAfter: number | undefined;
  held = Promise.withResolvers<void>();
  override async *generate(
    request: PreprocessedRequest,
    ctx: GenerateContext,
  ): AsyncGenerator<LLMEngineOutput> {
    let n = 0;
    for await (const out of super.generate(request, ctx)) {
      yield out;
      if (++n === this.holdAfter) {
        this.held.resolve();
        await new Promise((r) => ctx.signal.addEventListener("abort", r, { once: true }));
      }
    }
  }
}

const serve = () => serveQwen(new HoldingEngine("qwen", qwen.tokenizer, { script: reply }));

const tools = [{
  type: "function" as const,
  name: "get_weather",
  description: "The weather of a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: true,
}];
const input = "Weather in Bern?";

/** The items of a response as `[type, text or name(arguments)]`. */
const items = (r: OpenAI.Responses.Response) =>
  r.output.map((o) =>
    o.type === "message"
      ? [o.type, o.content.map((c) => c.type === "output_text" ? c.text : "").join("")]
      : o.type === "function_call"
      ? [o.type, `${o.name}(${o.arguments})`]
      : o.type === "reasoning"
      ? [o.type, o.content?.map((c) => c.text).join("")]
      : [o.type]
  );
const CALLED = [
  ["reasoning", "Need the weather."],
  ["message", "Let me check."],
  ["function_call", 'get_weather({"city":"Bern"})'],
];

Deno.test("openai client: responses.create with a function tool, whole, streamed and continued", async () => {
  const s = await serve();
  try {
    const r = await s.client.responses.create({ model: "qwen", input, tools });
    equal(r.status, "completed");
    deepStrictEqual(items(r), CALLED);
    equal(r.output_text, "Let me check."); // the client's own convenience, from the items
    ok(r.usage!.output_tokens_details.reasoning_tokens > 0);
    deepStrictEqual(r.tools, tools);

    const types: string[] = [];
    let completed: OpenAI.Responses.Response | undefined;
    const stream = await s.client.responses.create({ model: "qwen", input, tools, stream: true });
    for await (const e of stream) {
      if (types.at(-1) !== e.type) types.push(e.type);
      if (e.type === "response.completed") completed = e.response;
    }
    equal(types[0], "response.created");
    for (
      const t of [
        "response.reasoning_text.delta",
        "response.output_text.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
      ]
    ) ok(types.includes(t), t);
    deepStrictEqual(items(completed!), CALLED);
    // The client's accumulator rebuilds the response from the events alone.
    const final = await s.client.responses.stream({ model: "qwen", input, tools }).finalResponse();
    deepStrictEqual(items(final), CALLED);
    equal(final.output_text, "Let me check.");

    // The call's output sent back on top of the kept conversation.
    const call = r.output.find((o) => o.type === "function_call")!;
    const next = await s.client.responses.create({
      model: "qwen",
      previous_response_id: r.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: "sunny" }],
      tools,
    });
    deepStrictEqual(items(next), [["reasoning", "It said sunny."], ["message", "Sunny in Bern."]]);
    const prompt = qwen.tokenizer.decode(s.engine.requests.at(-1)!.token_ids);
    match(prompt, /Weather in Bern\?[\s\S]*Let me check\.[\s\S]*get_weather[\s\S]*sunny/);
    equal(next.previous_response_id, r.id);
    deepStrictEqual((await s.client.responses.retrieve(next.id)).output, next.output);
  } finally {
    await s.close();
  }
});

Deno.test("openai client: responses with text.format json_schema, whole and streamed", async () => {
  const s = await serve();
  try {
    const text = {
      format: { type: "json_schema" as const, name: "A", schema: WEATHER, strict: true },
    };
    const r = await s.client.responses.create({ model: "qwen", input: "A number", text });
    deepStrictEqual(JSON.parse(r.output_text), { a: 7 });
    deepStrictEqual(s.engine.requests.at(-1)?.sampling_options.guided_decoding, { json: WEATHER });
    const parsed = await s.client.responses.parse({ model: "qwen", input: "A number", text });
    deepStrictEqual(parsed.output_parsed, { a: 7 });
    const final = await s.client.responses.stream({ model: "qwen", input: "A number", text })
      .finalResponse();
    deepStrictEqual(JSON.parse(final.output_text), { a: 7 });
    equal(final.status, "completed");
  } finally {
    await s.close();
  }
});

Deno.test("responses over HTTP: a previous_response_id not kept is 404, bad fields 400 by name, all counted", async () => {
  const s = await serve();
  try {
    await rejects(
      s.client.responses.create({ model: "qwen", input, previous_response_id: "resp_nope" }),
      (e: unknown) => {
        ok(e instanceof OpenAI.NotFoundError, String(e));
        equal(e.message, "404 Previous response with id 'resp_nope' not found.");
        equal(e.param, "previous_response_id");
        equal(e.code, "previous_response_not_found");
        return true;
      },
    );
    const kept = await s.client.responses.create({ model: "qwen", input, store: false });
    await rejects(s.client.responses.retrieve(kept.id), OpenAI.NotFoundError);
    for (
      const [body, param] of [
        [{ prompt_cache_key: "k" }, "prompt_cache_key"],
        [{ tools: [{ type: "web_search" }] }, "tools"],
        [{ text: { format: { type: "json_schema", schema: {} } } }, "text.format"],
        [{ max_output_tokens: 100_000 }, "max_output_tokens"],
        [{ input: [{ role: "user", content: [{ type: "input_image" }] }] }, "input"],
      ] as const
    ) {
      await rejects(
        s.client.responses.create({ model: "qwen", input, ...body } as never),
        (e: unknown) => {
          ok(e instanceof OpenAI.BadRequestError, String(e));
          equal(e.param, param, e.message);
          return true;
        },
      );
    }
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    match(
      metrics,
      /dynamo_frontend_requests_total\{model="qwen",status="success",error_type=""\} 1\b/,
    );
    match(
      metrics,
      /dynamo_frontend_requests_total\{model="qwen",status="error",error_type="invalid_request_error"\} 6\b/,
    );
  } finally {
    await s.close();
  }
});

Deno.test("responses over HTTP: a drain that cuts a stream ends it with response.failed", async () => {
  const s = await serve();
  try {
    s.engine.holdAfter = 3;
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    const stream = await s.client.responses.create({ model: "qwen", input, stream: true });
    const read = (async () => {
      for await (const e of stream) events.push(e);
    })();
    await s.engine.held.promise;
    equal((await s.server.drain(0)).cut, 1);
    await read;
    const last = events.at(-1)!;
    equal(last.type, "response.failed");
    const r = (last as OpenAI.Responses.ResponseFailedEvent).response;
    equal(r.status, "failed");
    equal(r.error?.code, "server_error");
    deepStrictEqual(r.output.map((o) => "status" in o && o.status), ["incomplete"]);
    const refused = await fetch(`${s.url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "qwen", input }),
    });
    equal(refused.status, 503);
    await refused.body?.cancel();
  } finally {
    await s.close();
  }
});

Deno.test("a real serve of fortune: responses.create text, streamed, and JSON by schema", async () => {
  const server = await startServer();
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "x", maxRetries: 0 });
  try {
    const r = await client.responses.create({
      model: "fortune",
      input: "Tell me a fortune",
      max_output_tokens: 12,
      temperature: 1,
    });
    ok(r.status === "completed" || r.status === "incomplete", String(r.status));
    equal(r.usage!.output_tokens <= 12, true);
    const events: string[] = [];
    let text = "";
    const stream = await client.responses.create({
      model: "fortune",
      input: "Tell me a fortune",
      max_output_tokens: 12,
      stream: true,
    });
    for await (const e of stream) {
      events.push(e.type);
      if (e.type === "response.output_text.delta") text += e.delta;
      if (e.type === "response.incomplete" || e.type === "response.completed") {
        equal(e.response.output_text ?? text, text);
      }
    }
    equal(events[0], "response.created");
    ok(["response.completed", "response.incomplete"].includes(events.at(-1)!), events.join());
    const json = await client.responses.stream({
      model: "fortune",
      input: "A fortune as JSON",
      max_output_tokens: 300,
      temperature: 1,
      text: { format: { type: "json_schema", name: "fortune", schema: SCHEMA, strict: true } },
    }).finalResponse();
    equal(json.status, "completed");
    assertValid(SCHEMA, JSON.parse(json.output_text), "output_text");
  } finally {
    await server.stop();
  }
});
