/**
 * `deno task serve`'s connection deadlines over raw sockets, on the fortune model with
 * `--header-timeout 0.5 --keepalive-timeout 0.5`: a silent or trickling client is closed at the
 * header bound (408 once some of a head came), an idle keep-alive connection at the idle bound
 * while one that sends in time is served again; a streamed completion whose chunks come seconds
 * apart is not cut; a stalled body still gets the app's 408 (`--body-timeout`), and a client
 * leaving mid-stream still cancels its request.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { RawConnection } from "../../src/adapters/deno/raw_http.ts";
import { startServer } from "./server.ts";

const BOUND_MS = 500;
/** How late a close may come on a loaded machine. */
const SLACK_MS = 1500;
const server = await startServer([
  "--header-timeout",
  "0.5",
  "--keepalive-timeout",
  "0.5",
  "--body-timeout",
  "1.5",
  // One sequence at a time: a request queued behind another waits with its stream open.
  "--max-num-seqs",
  "1",
]);
const base = new URL(server.url);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const post = (path: string, body: unknown, extra = "") => {
  const json = JSON.stringify(body);
  return `POST ${path} HTTP/1.1\r\nHost: ${base.host}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${new TextEncoder().encode(json).length}\r\n${extra}\r\n${json}`;
};
const HEALTH = `GET /health HTTP/1.1\r\nHost: ${base.host}\r\n\r\n`;

async function metric(series: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(series + " "));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

Deno.test("serve: a connection that sends nothing is closed at --header-timeout", async () => {
  const c = await RawConnection.open(base);
  const closed = await c.closed();
  ok(closed, "closed");
  equal(closed.text, "", "nothing to answer");
  ok(closed.ms >= BOUND_MS - 20 && closed.ms < BOUND_MS + SLACK_MS, `${closed.ms} ms`);
});

Deno.test("serve: a head trickled a byte per 100 ms gets 408 and a close at --header-timeout", async () => {
  const c = await RawConnection.open(base);
  let stop = false;
  const sending = (async () => {
    for (const ch of HEALTH) {
      if (stop || !(await c.send(ch))) return;
      await sleep(100);
    }
  })();
  const res = await c.response();
  const ms = performance.now() - c.openedAt;
  stop = true;
  equal(res?.status, 408, "answered before the head was whole");
  equal(res.headers.get("connection"), "close");
  ok(/request head not received/.test(JSON.parse(res.body).error.message), res.body);
  ok(ms >= BOUND_MS - 20 && ms < BOUND_MS + SLACK_MS, `${ms} ms`);
  ok(await c.closed(), "then closed");
  await sending;
});

Deno.test("serve: keep-alive within --keepalive-timeout is served on the same connection, then closed idle", async () => {
  const c = await RawConnection.open(base);
  for (let i = 0; i < 3; i++) {
    ok(await c.send(HEALTH), `request ${i} sent`);
    const res = await c.response();
    equal(res?.status, 200, `request ${i} on the same connection`);
    equal(JSON.parse(res.body).status, "ready");
    if (i < 2) await sleep(BOUND_MS * 0.6);
  }
  const idle = performance.now();
  const closed = await c.closed();
  ok(closed, "closed");
  equal(closed.text, "", "an idle connection is closed without an answer");
  const ms = performance.now() - idle;
  ok(ms >= BOUND_MS - 20 && ms < BOUND_MS + SLACK_MS, `${ms} ms idle`);
});

Deno.test("serve: a streamed completion whose chunks come seconds apart is not cut", async () => {
  // The first request holds the only sequence (its first chunk has come); the streamed one
  // queued behind it has its 200 and headers sent at once, then nothing while the first runs on.
  // The first is read past twice the bounds (it must still be streaming then: not cut either),
  // and then its client leaves, which frees the sequence for the second. Nothing here depends
  // on how fast the model runs, only on the first outlasting 1.2 s of its 1,000 tokens.
  const first = await fetch(`${server.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "fortune",
      prompt: "x",
      max_tokens: 1000,
      ignore_eos: true,
      stream: true,
    }),
  });
  equal(first.status, 200);
  const reader = first.body!.getReader();
  ok(!(await reader.read()).done, "the first request's first chunk");
  const c = await RawConnection.open(base);
  await c.send(post("/v1/completions", {
    model: "fortune",
    prompt: "The fortune",
    max_tokens: 40,
    ignore_eos: true,
    stream: true,
    stream_options: { include_usage: true },
  }));
  const sent = performance.now();
  const second = c.response();
  while (performance.now() - sent < 2 * BOUND_MS + 200) {
    ok(!(await reader.read()).done, "the request ahead streamed on past both bounds, not cut");
  }
  await reader.cancel();
  const res = await second;
  equal(res?.status, 200);
  equal(res.headers.get("content-type"), "text/event-stream");
  ok(res.body.trimEnd().endsWith("data: [DONE]"), res.body.slice(-200));
  // A chunk may carry several tokens (they are read back steps behind), so the tokens are
  // counted by the usage chunk and the text's length, not by the number of events.
  const chunks = res.body.split("\n\n").filter((e) => e.startsWith("data: {"))
    .map((e) => JSON.parse(e.slice(6)));
  const usage = chunks.at(-1).usage;
  equal(usage?.completion_tokens, 40, "every token came");
  ok(chunks.some((c) => c.choices?.[0]?.finish_reason === "length"), "ended by max_tokens");
  ok(res.gapMs! > 2 * BOUND_MS, `the longest wait between chunks: ${res.gapMs} ms`);
  c.close();
});

Deno.test("serve: a stalled body still gets the app's 408 (--body-timeout), not the front's", async () => {
  const c = await RawConnection.open(base);
  const whole = post("/v1/completions", { model: "fortune", prompt: "x", max_tokens: 2 });
  await c.send(whole.slice(0, whole.indexOf("\r\n\r\n") + 10));
  const res = await c.response();
  equal(res?.status, 408);
  ok(/request body not received within 1500 ms/.test(res.body), res.body);
  ok(res.ms >= 1500 - 20, `${res.ms} ms: past --header-timeout, at --body-timeout`);
  c.close();
});

Deno.test("serve: a client leaving mid-stream cancels its request", async () => {
  const cancelled =
    'dynamo_frontend_requests_total{model="fortune",status="cancelled",error_type=""}';
  const before = await metric(cancelled);
  const c = await RawConnection.open(base);
  await c.send(post("/v1/completions", {
    model: "fortune",
    prompt: "x",
    max_tokens: 900,
    ignore_eos: true,
    stream: true,
  }));
  await sleep(1500);
  c.close();
  let after = before;
  for (let i = 0; i < 100 && after === before; i++) {
    await sleep(100);
    after = await metric(cancelled);
  }
  equal(after, before + 1, "the engine saw the client go");
  equal(await metric('vllm:num_requests_running{model_name="fortune"}'), 0);
});

Deno.test("serve: SIGTERM still drains and exits 0 behind the front", async () => {
  const { code, stderr } = await server.stop();
  equal(code, 0, stderr);
  ok(/header timeout 0\.5 s, keep-alive timeout 0\.5 s/.test(stderr), stderr);
});
