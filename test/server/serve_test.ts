/**
 * `deno task serve` on the fortune model, driven by real clients: the official `openai` npm
 * package (streaming and not), a real Prometheus server scraping `/metrics` (its query API must
 * return Kiln's series), `promtool` on a live scrape, DNS rebinding and CORS over raw sockets,
 * and SIGTERM draining before exit.
 */
import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import OpenAI from "openai";
import { promtoolCheck } from "../support/promtool.ts";
import { rawRequest } from "../../src/adapters/deno/raw_http.ts";
import { startServer } from "./server.ts";
import { assertValid, SCHEMA } from "../support/json_schema.ts";

const KEY = "test-key";
const APP = "http://app.example:5173";
const server = await startServer(["--api-key", KEY, "--max-queued", "3", "--cors-origins", APP]);
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0 });
const raw = (path: string, init: RequestInit = {}) =>
  fetch(`${server.url}${path}`, {
    ...init,
    headers: {
      authorization: `Bearer ${KEY}`,
      "content-type": "application/json",
      ...init.headers,
    },
  });

Deno.test("completions through the openai client: text, usage, seeded, n choices, logprobs", async () => {
  const req = { model: "fortune", prompt: "You will", max_tokens: 12, seed: 5, temperature: 0.8 };
  const a = await client.completions.create(req);
  const b = await client.completions.create(req);
  equal(a.choices[0]!.text, b.choices[0]!.text, "same seed, same text");
  ok(a.choices[0]!.text.length > 0);
  equal(a.choices[0]!.finish_reason, "length");
  deepStrictEqual(a.usage, { prompt_tokens: 9, completion_tokens: 12, total_tokens: 21 });
  const many = await client.completions.create({ ...req, n: 3, logprobs: 2 });
  equal(many.choices.length, 3);
  equal(many.usage?.completion_tokens, 36);
  const lp = many.choices[0]!.logprobs!;
  equal(lp.tokens!.length, 12);
  ok(lp.token_logprobs!.every((x) => x <= 0));
  ok(lp.top_logprobs!.every((t) => Object.keys(t).length >= 1));
  const models = await client.models.list();
  deepStrictEqual(models.data.map((m) => m.id), ["fortune"]);
});

Deno.test("chat completions: streamed deltas join to the whole answer; usage chunk; stop strings", async () => {
  const req = {
    model: "fortune",
    messages: [{ role: "user" as const, content: "Tell me a fortune" }],
    max_tokens: 24,
    seed: 9,
    temperature: 0.7,
  };
  const whole = await client.chat.completions.create(req);
  const text = whole.choices[0]!.message.content!;
  const stream = await client.chat.completions.create({
    ...req,
    stream: true,
    stream_options: { include_usage: true },
  });
  let streamed = "", finish: string | null = null, usage;
  for await (const c of stream) {
    streamed += c.choices[0]?.delta.content ?? "";
    finish = c.choices[0]?.finish_reason ?? finish;
    usage = c.usage ?? usage;
  }
  equal(streamed, text);
  equal(finish, whole.choices[0]!.finish_reason);
  deepStrictEqual(usage, whole.usage);
  // A stop string taken from the middle of the answer ends it there.
  const stop = text.slice(6, 9);
  ok(stop.length === 3, `answer long enough: ${JSON.stringify(text)}`);
  const stopped = await client.chat.completions.create({ ...req, stop: [stop] });
  equal(stopped.choices[0]!.message.content, text.slice(0, text.indexOf(stop)));
  equal(stopped.choices[0]!.finish_reason, "stop");
  ok(stopped.usage!.completion_tokens < whole.usage!.completion_tokens);
});

Deno.test("bad requests get OpenAI-style errors and the server keeps serving", async () => {
  const status = (code: number) => (e: unknown) => (e as { status?: number }).status === code;
  await rejects(client.completions.create({ model: "nope", prompt: "x" }), status(404));
  await rejects(client.completions.create({ model: "fortune", prompt: "x", n: 100 }), status(400));
  await rejects(
    client.completions.create({ model: "fortune", prompt: "x", max_tokens: 5000 }),
    status(400),
  );
  await rejects(
    client.completions.create({ model: "fortune", prompt: "x", temperature: -1 }),
    status(400),
  );
  const wrongKey = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "wrong", maxRetries: 0 });
  await rejects(wrongKey.models.list(), status(401));
  const bad = await raw("/v1/completions", { method: "POST", body: "{not json" });
  equal(bad.status, 400);
  const body = await bad.json();
  equal(body.error.type, "invalid_request_error");
  ok(/malformed JSON/.test(body.error.message));
  const big = await raw("/v1/completions", { method: "POST", body: "x".repeat((1 << 20) + 1) });
  equal(big.status, 413);
  await big.body?.cancel();
  const template = await raw("/v1/chat/completions", {
    method: "POST",
    body: JSON.stringify({ model: "fortune", messages: [{ role: "system", content: "x" }] }),
  });
  equal(template.status, 400, "the test model's template refuses a system message");
  ok(/system messages are not supported/.test((await template.json()).error.message));
  equal((await fetch(`${server.url}/health`)).status, 200, "health needs no key");
  const ok1 = await client.completions.create({ model: "fortune", prompt: "A", max_tokens: 2 });
  equal(ok1.choices[0]!.finish_reason, "length");
});

Deno.test("response_format json_schema and a required tool call, streamed or not: JSON that validates", async () => {
  const messages = [{ role: "user" as const, content: "A fortune as JSON" }];
  for (const stream of [false, true]) {
    const body = {
      model: "fortune",
      messages,
      max_tokens: 300,
      temperature: 1,
      seed: 3,
      response_format: {
        type: "json_schema" as const,
        json_schema: { name: "fortune", schema: SCHEMA, strict: true },
      },
    };
    const content = stream
      ? (await client.chat.completions.stream(body).finalChatCompletion()).choices[0]!
      : (await client.chat.completions.create({ ...body, stream: false })).choices[0]!;
    equal(content.finish_reason, "stop");
    assertValid(SCHEMA, JSON.parse(content.message.content!), "content");
  }
  // `required` and a named function: the reply is one call (no parallel calls: an array could
  // run on), its arguments valid against the function's parameters.
  const parameters = {
    type: "object",
    properties: { days: { type: "integer", minimum: 1, maximum: 7 } },
    required: ["days"],
    additionalProperties: false,
  };
  for (
    const tool_choice of ["required", { type: "function", function: { name: "luck" } }] as const
  ) {
    const call = await client.chat.completions.create({
      model: "fortune",
      messages,
      max_tokens: 200,
      temperature: 1,
      seed: 4,
      tools: [{ type: "function", function: { name: "luck", parameters } }],
      tool_choice,
      parallel_tool_calls: false,
    });
    const choice = call.choices[0]!;
    equal(choice.finish_reason, "tool_calls", JSON.stringify(choice));
    const fn = choice.message.tool_calls![0]!;
    equal(fn.type === "function" && fn.function.name, "luck");
    assertValid(parameters, JSON.parse(fn.type === "function" ? fn.function.arguments : ""));
  }
  // A schema the grammar engine refuses: a 400 naming the OpenAI field.
  await rejects(
    client.chat.completions.create({
      model: "fortune",
      messages,
      max_tokens: 8,
      response_format: {
        type: "json_schema",
        json_schema: { name: "bad", schema: { type: "strin" } },
      },
    }),
    (e: unknown) => {
      ok(e instanceof OpenAI.BadRequestError, String(e));
      equal(e.param, "response_format");
      ok(/guided_decoding\.json/.test(e.message), e.message);
      return true;
    },
  );
  const after = await client.completions.create({ model: "fortune", prompt: "A", max_tokens: 2 });
  equal(after.choices[0]!.finish_reason, "length");
});

Deno.test("a client that disconnects cancels its request; too many at once get 429", async () => {
  const before = await scrapeValue(
    'dynamo_frontend_requests_total{model="fortune",status="cancelled",error_type=""}',
  );
  const ctrl = new AbortController();
  const res = await raw("/v1/completions", {
    method: "POST",
    signal: ctrl.signal,
    body: JSON.stringify({
      model: "fortune",
      prompt: "x",
      max_tokens: 900,
      stream: true,
      ignore_eos: true,
    }),
  });
  const reader = res.body!.getReader();
  await reader.read();
  ctrl.abort();
  let after = before;
  for (let i = 0; i < 100 && after === before; i++) {
    await new Promise((r) => setTimeout(r, 100));
    after = await scrapeValue(
      'dynamo_frontend_requests_total{model="fortune",status="cancelled",error_type=""}',
    );
  }
  equal(after, before + 1, "the engine saw the abort");
  const long = { model: "fortune", prompt: "x", max_tokens: 24, ignore_eos: true };
  const results = await Promise.allSettled(
    Array.from({ length: 6 }, () => client.completions.create(long)),
  );
  ok(
    results.some((r) =>
      r.status === "rejected" && (r.reason as { status?: number }).status === 429
    ),
  );
  ok(results.some((r) => r.status === "fulfilled"));
});

Deno.test("loopback serve: a rebound Host gets 421, a foreign Origin 403; --cors-origins gets CORS; HTTP/1.0 without Host is served", async () => {
  const base = new URL(server.url);
  const body = JSON.stringify({ model: "fortune", prompt: "x", max_tokens: 2 });
  const post = (host: string, origin: string) =>
    rawRequest(base, [
      "POST /v1/completions HTTP/1.1",
      `Host: ${host}`,
      `Origin: ${origin}`,
      `Authorization: Bearer ${KEY}`,
      "Content-Type: application/json",
      `Content-Length: ${body.length}`,
      "Connection: close",
    ], { pieces: [new TextEncoder().encode(body)] });
  const evil = `evil.example:${base.port}`;
  const rebound = await post(evil, `http://${evil}`);
  equal(rebound?.status, 421);
  equal(JSON.parse(rebound!.body).error.code, "host_not_allowed");
  const foreign = await post(base.host, "http://evil.example");
  equal(foreign?.status, 403);
  equal(JSON.parse(foreign!.body).error.code, "origin_not_allowed");
  const preflight = await fetch(`${server.url}/v1/chat/completions`, {
    method: "OPTIONS",
    headers: {
      origin: APP,
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization,content-type",
    },
  });
  equal(preflight.status, 204);
  equal(preflight.headers.get("access-control-allow-origin"), APP);
  ok(/authorization/i.test(preflight.headers.get("access-control-allow-headers") ?? ""));
  const listed = await post(base.host, APP);
  equal(listed?.status, 200, listed?.body ?? "no response");
  equal(listed?.headers.get("access-control-allow-origin"), APP);
  equal(JSON.parse(listed!.body).choices[0].finish_reason, "length");
  const unlisted = await fetch(`${server.url}/v1/models`, {
    method: "OPTIONS",
    headers: { origin: "http://evil.example", "access-control-request-method": "GET" },
  });
  equal(unlisted.status, 403);
  equal(unlisted.headers.get("access-control-allow-origin"), null);
  await unlisted.body?.cancel();
  const old = await rawRequest(base, ["GET /health HTTP/1.0"]);
  equal(old?.status, 200, old?.body ?? "no response");
  equal(JSON.parse(old!.body).status, "ready");
});

Deno.test("serve refuses --cors-origins * and a host name with a port, before loading", async () => {
  for (const flags of [["--cors-origins", "*"], ["--allowed-hosts", "kiln.lan:8080"]]) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL("../../src/adapters/deno/serve.ts", import.meta.url).pathname,
        ...flags,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    equal(out.code, 2, stderr);
    ok(/^serve: /m.test(stderr) && stderr.includes(JSON.stringify(flags[1])), stderr);
  }
});

async function scrape(accept?: string): Promise<Response> {
  return await raw("/metrics", accept ? { headers: { accept } } : {});
}

async function scrapeValue(series: string): Promise<number> {
  const text = await (await scrape()).text();
  const line = text.split("\n").find((l) => l.startsWith(series + " "));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

Deno.test("a live /metrics scrape passes promtool; OpenMetrics when asked", async () => {
  const res = await scrape();
  ok(res.headers.get("content-type")!.startsWith("text/plain; version=0.0.4"));
  const check = await promtoolCheck(await res.text());
  ok(check.ok, check.output);
  const om = await scrape("application/openmetrics-text; version=1.0.0");
  ok(om.headers.get("content-type")!.startsWith("application/openmetrics-text"));
  ok((await om.text()).trimEnd().endsWith("# EOF"));
});

Deno.test("a real Prometheus server scrapes Kiln; its query API returns the request counter", async () => {
  const done = await scrapeValue(
    'dynamo_frontend_requests_total{model="fortune",status="success",error_type=""}',
  );
  ok(done >= 5);
  const port = freePort();
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(
    `${dir}/prometheus.yml`,
    `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: kiln\n    authorization:\n      credentials: ${KEY}\n    static_configs:\n      - targets: ["${
      new URL(server.url).host
    }"]\n`,
  );
  const prom = new Deno.Command("prometheus", {
    args: [
      `--config.file=${dir}/prometheus.yml`,
      `--storage.tsdb.path=${dir}/data`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
  try {
    let value: number | undefined;
    for (let i = 0; i < 120 && value === undefined; i++) {
      await new Promise((r) => setTimeout(r, 500));
      const q = encodeURIComponent('dynamo_frontend_requests_total{status="success"}');
      const r = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${q}`).catch(() =>
        undefined
      );
      const body = r?.ok ? await r.json() : undefined;
      const v = body?.data?.result?.[0]?.value?.[1];
      if (v !== undefined) value = Number(v);
    }
    equal(value, done, "Prometheus stored the counter Kiln reported");
  } finally {
    prom.kill("SIGTERM");
    await prom.status;
    await Deno.remove(dir, { recursive: true });
  }
});

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

Deno.test("SIGTERM drains, cleans up and exits 0, reporting drain and cleanup time", async () => {
  const { code, stderr } = await server.stop();
  equal(code, 0, stderr);
  ok(/drain_time_seconds\{/.test(stderr) && /cleanup_time_seconds\{/.test(stderr), stderr);
});
