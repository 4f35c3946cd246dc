/**
 * The server's drain, its error headers and its key check, over the mock engine (the GPU is not
 * the point here; `probe_test.ts` sends the hostile requests over real sockets).
 */
import { match, ok, strictEqual as equal } from "node:assert/strict";
import { ABORT_FINISH } from "./app.ts";
import { clip } from "./errors.ts";
import { keyMatches } from "./guard.ts";
import { mockServer } from "../../test/support/server.ts";
import { firstChunks } from "../../test/support/streams.ts";

const json = { "content-type": "application/json" };
const body = (extra: Record<string, unknown>) =>
  JSON.stringify({ model: "fortune", prompt: "Hello", ignore_eos: true, ...extra });

/** Server-sent events of a response, parsed (`[DONE]` kept as a string). */
async function events(res: Response): Promise<unknown[]> {
  const text = await res.text();
  return text.split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => {
    const d = e.slice(6);
    return d === "[DONE]" ? d : JSON.parse(d);
  });
}

const finishOf = (e: unknown) =>
  (e as { choices?: { finish_reason: string | null }[] }).choices?.[0]?.finish_reason;

Deno.test("drain: /health 503 at once, new requests 503, a stream in flight runs to its end", async () => {
  const s = await mockServer({}, { delayMs: 10 });
  try {
    const res = await fetch(new URL("/v1/completions", s.url), {
      method: "POST",
      headers: json,
      body: body({ max_tokens: 20, stream: true }),
    });
    equal(res.status, 200);
    const drained = s.server.drain(10_000);
    const health = await fetch(new URL("/health", s.url));
    equal(health.status, 503);
    equal((await health.json()).status, "draining");
    const late = await fetch(new URL("/v1/completions", s.url), {
      method: "POST",
      headers: json,
      body: body({ max_tokens: 2 }),
    });
    equal(late.status, 503);
    ok(late.headers.get("retry-after"));
    await late.body?.cancel();
    const got = await events(res);
    equal(got.at(-1), "[DONE]");
    equal(finishOf(got.at(-2)), "length", "ran to max_tokens");
    equal((await drained).cut, 0);
  } finally {
    await s.close();
  }
});

Deno.test("drain deadline: streams and whole responses are cut with finish_reason abort", async () => {
  const s = await mockServer({}, { delayMs: 20 });
  // Both requests in flight, each with a token made: 899 still to come, at 20 ms or more each.
  const bothStarted = firstChunks(s.engine, 2);
  try {
    const stream = fetch(new URL("/v1/completions", s.url), {
      method: "POST",
      headers: json,
      body: body({ max_tokens: 900, stream: true }),
    });
    const whole = fetch(new URL("/v1/chat/completions", s.url), {
      method: "POST",
      headers: json,
      body: JSON.stringify({
        model: "fortune",
        messages: [{ role: "user", content: "hi" }],
        max_tokens: 900,
        ignore_eos: true,
      }),
    });
    await bothStarted;
    equal(s.server.inFlight, 2);
    const { cut } = await s.server.drain(300);
    equal(cut, 2);
    const got = await events(await stream);
    equal(got.at(-1), "[DONE]");
    equal(finishOf(got.at(-2)), ABORT_FINISH);
    const w = await whole;
    equal(w.status, 200);
    const answer = await w.json();
    equal(answer.choices[0].finish_reason, "abort");
    ok(answer.usage.completion_tokens > 0 && answer.usage.completion_tokens < 900);
  } finally {
    await s.close();
  }
});

Deno.test("a request whose signal is already aborted is cancelled before any token, and counted so", async () => {
  const s = await mockServer({}, { delayMs: 1 });
  try {
    const gone = new AbortController();
    gone.abort();
    const post = (path: string, payload: string) =>
      s.server.fetch(
        new Request(new URL(path, s.url), {
          method: "POST",
          headers: { ...json, host: s.url.host },
          body: payload,
          signal: gone.signal,
        }),
      );
    const whole = await post(
      "/v1/chat/completions",
      JSON.stringify({ model: "fortune", messages: [{ role: "user", content: "hi" }] }),
    );
    equal(whole.status, 200);
    const answer = await whole.json();
    equal(answer.choices[0].finish_reason, "cancelled");
    equal(answer.choices[0].message.content, "");
    equal(answer.usage.completion_tokens, 0);
    const stream = await post("/v1/completions", body({ max_tokens: 50, stream: true }));
    equal(stream.status, 200);
    const sent = await events(stream);
    ok(sent.every((e) => e === "[DONE]" || finishOf(e) === "cancelled"), JSON.stringify(sent));
    equal(s.engine.usedBlocks, 0);
    const metrics = await (await fetch(new URL("/metrics", s.url))).text();
    match(metrics, /dynamo_frontend_requests_total\{[^}]*status="cancelled"[^}]*\} 2\n/);
    match(metrics, /dynamo_frontend_output_sequence_tokens_sum\{[^}]*\} 0\n/);
  } finally {
    await s.close();
  }
});

Deno.test("a client that stops reading a stream cancels its request in the engine", async () => {
  const s = await mockServer({}, { delayMs: 5 });
  try {
    const res = await s.server.fetch(
      new Request(new URL("/v1/completions", s.url), {
        method: "POST",
        headers: { ...json, host: s.url.host },
        body: body({ max_tokens: 900, stream: true }),
      }),
    );
    const reader = res.body!.getReader();
    await reader.read(); // the first chunk
    await reader.cancel();
    const { cut } = await s.server.drain(60_000); // resolves once nothing runs
    equal(cut, 0);
    equal(s.engine.usedBlocks, 0);
    const metrics = await (await fetch(new URL("/metrics", s.url))).text();
    match(metrics, /dynamo_frontend_requests_total\{[^}]*status="cancelled"[^}]*\} 1\n/);
    match(metrics, /dynamo_frontend_inflight_requests\{[^}]*\} 0\n/);
  } finally {
    await s.close();
  }
});

Deno.test("401 carries WWW-Authenticate, 405 Allow, 429 Retry-After; HEAD /health", async () => {
  const s = await mockServer({ apiKey: "secret", maxQueued: 1 }, { delayMs: 20 });
  try {
    const none = await fetch(new URL("/v1/models", s.url));
    equal(none.status, 401);
    equal(none.headers.get("www-authenticate"), 'Bearer realm="kiln"');
    await none.body?.cancel();
    const wrong = await fetch(new URL("/v1/models", s.url), {
      headers: { authorization: "Bearer secreT" },
    });
    ok(/invalid_token/.test(wrong.headers.get("www-authenticate") ?? ""));
    await wrong.body?.cancel();
    const auth = { authorization: "Bearer secret" };
    const put = await fetch(new URL("/v1/models", s.url), { method: "PUT", headers: auth });
    equal(put.status, 405);
    equal(put.headers.get("allow"), "GET, HEAD");
    await put.body?.cancel();
    const head = await fetch(new URL("/health", s.url), { method: "HEAD" });
    equal(head.status, 200);
    const ctrl = new AbortController();
    const send = () =>
      fetch(new URL("/v1/completions", s.url), {
        method: "POST",
        signal: ctrl.signal,
        headers: { ...json, ...auth },
        body: body({ max_tokens: 900, stream: true }),
      });
    const first = await send();
    const second = await send();
    equal(first.status, 200);
    equal(second.status, 429);
    equal(second.headers.get("retry-after"), "1");
    await second.body?.cancel();
    ctrl.abort();
    await first.body?.cancel().catch(() => {});
  } finally {
    await s.close();
  }
});

Deno.test("keyMatches: the right bearer key only; clip cuts long messages", async () => {
  ok(await keyMatches("Bearer k3y", "k3y"));
  ok(!(await keyMatches("Bearer k3", "k3y")));
  ok(!(await keyMatches("Bearer k3yy", "k3y")));
  ok(!(await keyMatches("k3y", "k3y")));
  ok(!(await keyMatches(null, "")));
  const long = clip("x".repeat(800_000));
  ok(long.length < 600 && long.endsWith("(799488 more characters)"), long.slice(-40));
});
