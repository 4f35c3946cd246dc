import { deepStrictEqual, match, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { rangeServer } from "../../test/support/range_server.ts";
import { openModel } from "./open.ts";
import {
  APIUserAbortError,
  type ChatCompletionChunk,
  type ChatCompletionRequest,
} from "../openai/completions.ts";
import type { HostStats } from "./protocol.ts";
import { assertValid, SCHEMA } from "../../test/support/json_schema.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;
const SPA = "<!doctype html>\n<html><body><div id=app></div></body></html>\n";

Deno.test("openModel: Kiln's worker module, URL load with progress, generate, chat, stop, metrics", async () => {
  const server = rangeServer(FORTUNE);
  const progress: number[] = [];
  const model = await openModel({
    model: server.base,
    onProgress: (n, total) => progress.push(n / total),
    engine: { kvBlocks: 64 },
  });
  try {
    equal(model.config.model, "m");
    ok(progress.length > 0 && progress.at(-1) === 1, `progress ${progress.slice(-3)}`);

    let text = "", finish: string | undefined;
    for await (const p of model.generate("You will", { max_tokens: 12, seed: 7 })) {
      text += p.text;
      finish = p.finish ?? finish;
    }
    ok(text.length > 0, "generated text");
    equal(finish, "length");

    const stop = new AbortController();
    let pieces = 0;
    finish = undefined;
    for await (const p of model.generate("A", { max_tokens: 500, signal: stop.signal })) {
      if (++pieces === 2) stop.abort();
      finish = p.finish ?? finish;
    }
    equal(finish, "cancelled");

    const chunks: ChatCompletionChunk[] = [];
    const stream = await model.chat.completions.create({
      messages: [{ role: "user", content: "Tell me a fortune" }],
      max_tokens: 8,
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const c of stream) chunks.push(c);
    equal(chunks[0]?.object, "chat.completion.chunk");
    equal(chunks[0]?.choices[0]?.delta.role, "assistant");
    equal(chunks.at(-2)?.choices[0]?.finish_reason, "length");
    equal(chunks.at(-1)?.usage?.completion_tokens, 8);

    const whole = await model.chat.completions.create({
      messages: [{ role: "user", content: "Hi" }],
      max_tokens: 4,
    });
    equal(whole.object, "chat.completion");
    equal(whole.usage.completion_tokens, 4);

    await rejects(
      model.chat.completions.create({ messages: [], max_tokens: 4 }),
      (e) => e instanceof EngineError && e.type === "InvalidArgument",
    );
    // Tools with `auto`: fortune's template shows the `<tool_call>` format, so the reply is read
    // for calls; fortune never learnt to make one, and answers with text.
    const hi = [{ role: "user", content: "Hi" }];
    const auto = await model.chat.completions.create({
      messages: hi,
      max_tokens: 4,
      tools: [{ type: "function", function: { name: "f" } }],
    });
    equal(auto.choices[0]?.message.role, "assistant");
    equal(auto.choices[0]?.finish_reason, "length");
    equal(typeof auto.choices[0]?.message.content, "string");

    // Refused by name rather than answered as free text: tool_choice with no tools; logit_bias
    // is not honoured.
    const naming = (field: string) => (e: unknown) =>
      e instanceof EngineError && e.type === "InvalidArgument" && e.message.startsWith(field);
    for (
      const [field, extra] of [
        ["tool_choice", { tool_choice: "required" }],
        ["logit_bias", { logit_bias: { "65": 5 } }],
      ] as const
    ) {
      const body = { messages: hi, max_tokens: 4, ...extra } as never;
      await rejects(model.chat.completions.create(body), naming(field));
      await rejects(
        model.chat.completions.create({ ...(body as object), stream: true } as never),
        naming(field),
      );
    }
    await rejects(
      model.completions.create({ prompt: "Hi", logit_bias: { "1": -1 } } as never),
      naming("logit_bias"),
    );
    const plain = await model.chat.completions.create(
      {
        messages: hi,
        max_tokens: 2,
        response_format: { type: "text" },
        tool_choice: "none",
        tools: [],
      } as ChatCompletionRequest & { stream?: false },
    );
    equal(plain.usage.completion_tokens, 2);
    // response_format is honoured in the worker's engine: JSON that validates.
    const json = await model.chat.completions.create(
      {
        messages: [{ role: "user", content: "A fortune as JSON" }],
        max_tokens: 300,
        temperature: 1,
        seed: 5,
        response_format: {
          type: "json_schema",
          json_schema: { name: "fortune", schema: SCHEMA },
        },
      } as ChatCompletionRequest & { stream?: false },
    );
    equal(json.choices[0]!.finish_reason, "stop");
    assertValid(SCHEMA, JSON.parse(json.choices[0]!.message.content!));
    await rejects(
      model.chat.completions.create({
        messages: hi,
        max_tokens: 4,
        response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: 1 } } },
      } as never),
      naming("response_format"),
    );
    const scrape = model.metricsText();
    match(scrape, /dynamo_frontend_requests_total\{[^}]*status="success"[^}]*\} 6\n/);
    match(scrape, /dynamo_frontend_requests_total\{[^}]*status="cancelled"[^}]*\} 1\n/);
    match(scrape, /dynamo_component_total_blocks\{[^}]*\} 64\n/);
    match(model.metricsText("openmetrics"), /# EOF\n$/);
  } finally {
    await model.close();
    await server.shutdown();
  }
});

Deno.test("openModel from a server without Range and with an SPA fallback: each file sent once per reader", async () => {
  // Python's http.server ignores Range; Vite without appType "mpa" answers index.html for every
  // missing file. With fortune's tokenizer_config.json and generation_config.json hidden, both
  // come back as that page and count as absent.
  const server = rangeServer(FORTUNE, {
    range: false,
    fallback: SPA,
    hide: ["tokenizer_config.json", "generation_config.json"],
  });
  const model = await openModel({ model: server.base, engine: { kvBlocks: 16 } });
  try {
    let text = "";
    for await (const p of model.generate("You will", { max_tokens: 4, seed: 3 })) text += p.text;
    ok(text.length > 0, "generated text");
  } finally {
    await model.close();
    await server.shutdown();
  }
  const asked = (path: string) => server.served.filter((r) => r.path === path);
  ok(asked("tokenizer_config.json").every((r) => r.status === 200), "answered by the fallback");
  const weights = asked("model.safetensors").filter((r) => r.method === "GET");
  equal(weights.length, 1, JSON.stringify(weights));
  // config.json has two readers: the page (EOS ids for the text side) and the engine's worker.
  const readers = (path: string) => (path === "config.json" ? 2 : 1);
  let bound = 0;
  for (const path of new Set(server.served.filter((r) => r.bytes > 0).map((r) => r.path))) {
    const size = (await Deno.stat(FORTUNE + path)).size;
    ok(server.bytesSent(path) <= size * readers(path), `${path}: ${server.bytesSent(path)} bytes`);
    bound += size * readers(path);
  }
  const total = server.served.reduce((n, r) => n + r.bytes, 0);
  ok(total <= bound, `${total} bytes sent, each file once per reader is ${bound}`);
});

Deno.test("openModel on an SPA fallback server without tokenizer.json names the URL and the fix", async () => {
  const server = rangeServer(FORTUNE, { fallback: SPA, hide: ["tokenizer.json"] });
  try {
    await rejects(openModel({ model: server.base }), (e) => {
      ok(e instanceof EngineError && e.type === "InvalidArgument", String(e));
      ok(e.message.startsWith(`${server.base}tokenizer.json: `), e.message);
      match(e.message, /the server answered an HTML page/);
      match(e.message, /appType: "mpa"/);
      return true;
    });
  } finally {
    await server.shutdown();
  }
});

Deno.test("openModel: an aborted signal cancels before any token; leaving a loop cancels in the worker", async () => {
  const server = rangeServer(FORTUNE);
  const model = await openModel({ model: server.base, engine: { kvBlocks: 64, maxNumSeqs: 4 } });
  const stats = async () => (await model.engine.stats())!;
  const live = (s: HostStats) =>
    s.requests.started - s.requests.finished - s.requests.cancelled - s.requests.failed;
  const isAbort = (e: unknown) => {
    ok(e instanceof APIUserAbortError && e instanceof EngineError, String(e));
    equal(e.type, "Cancelled");
    equal(e.message, "Request was aborted.");
    return true;
  };
  try {
    const gone = new AbortController();
    gone.abort();
    // generate: one last piece, no text, no token.
    const pieces = [];
    for await (const p of model.generate("You will", { max_tokens: 30, signal: gone.signal })) {
      pieces.push(p);
    }
    deepStrictEqual(pieces, [{ text: "", tokens: 0, finish: "cancelled" }]);
    // Whole answers reject as the openai client's do; streams end with a cancelled chunk.
    const messages = [{ role: "user", content: "Hi" }];
    await rejects(
      model.chat.completions.create({ messages, max_tokens: 8 }, { signal: gone.signal }),
      isAbort,
    );
    await rejects(
      model.completions.create({ prompt: "You", max_tokens: 8 }, { signal: gone.signal }),
      isAbort,
    );
    const chunks: ChatCompletionChunk[] = [];
    const stream = await model.chat.completions.create(
      { messages, max_tokens: 8, stream: true, stream_options: { include_usage: true } },
      { signal: gone.signal },
    );
    for await (const c of stream) chunks.push(c);
    equal(chunks.length, 2);
    equal(chunks[0]?.choices[0]?.finish_reason, "cancelled");
    equal(chunks[0]?.choices[0]?.delta.content ?? "", "");
    equal(chunks[1]?.usage?.completion_tokens, 0);
    equal((await stats()).requests.cancelled, 4);

    // A whole answer whose signal aborts once the engine has the request rejects too.
    const stop = new AbortController();
    const running = model.completions.create(
      { prompt: "A", max_tokens: 900, ignore_eos: true },
      { signal: stop.signal },
    );
    equal(live(await stats()), 1, "the engine is running it");
    stop.abort();
    await rejects(running, isAbort);

    // Four consumers leave after two pieces, one leaves a chat stream: all cancelled there.
    await Promise.all([0, 1, 2, 3].map(async (i) => {
      let n = 0;
      for await (const _ of model.generate(`${i}`, { max_tokens: 900, ignore_eos: true })) {
        if (++n === 2) break;
      }
    }));
    const chat = await model.chat.completions.create({
      messages,
      max_tokens: 900,
      ignore_eos: true,
      stream: true,
    });
    for await (const _ of chat) break;
    const left = await stats();
    equal(live(left), 0, `nothing left running: ${JSON.stringify(left)}`);
    equal(left.streams, 0);
    equal(left.requests.cancelled, 10);
    // A fifth request gets a slot at once, runs in a handful of steps, and frees its blocks
    // (sampled at the default temperature: EOS ignored, so that it always runs to max_tokens).
    let text = "", finish;
    for await (const p of model.generate("Five", { max_tokens: 2, ignore_eos: true })) {
      text += p.text;
      finish = p.finish ?? finish;
    }
    equal(finish, "length");
    const after = await stats();
    ok(after.steps - left.steps < 20, `the fifth took ${after.steps - left.steps} steps`);
    equal(after.usedBlocks, 0);
    const scrape = model.metricsText();
    match(scrape, /dynamo_frontend_requests_total\{[^}]*status="cancelled"[^}]*\} 10\n/);
    match(scrape, /dynamo_frontend_requests_total\{[^}]*status="success"[^}]*\} 1\n/);
    match(scrape, /dynamo_frontend_inflight_requests\{[^}]*\} 0\n/);
    match(scrape, /dynamo_component_gpu_cache_usage_percent\{[^}]*\} 0\n/);
  } finally {
    await model.close(); // nothing abandoned is left for its drain to wait for
    await server.shutdown();
  }
});
