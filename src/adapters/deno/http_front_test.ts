/**
 * The TCP front over a small handler, driven over raw sockets with 300 ms bounds: a silent or
 * trickling client is closed at the header bound (408 once some of a head came), an idle
 * keep-alive connection at the idle bound, while a response whose chunks are far apart is never
 * cut; pipelined requests, the client's `Host`, refused heads, and a client that goes away.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { RawConnection } from "./raw_http.ts";
import { type HttpFront, serveFront } from "./http_front.ts";

const BOUND = 300;
/** How late a close may come on a loaded machine. */
const SLACK = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Responses whose body the server cancelled (the client went away), by path. */
const aborted = new Set<string>();

function handler(req: Request): Response {
  const url = new URL(req.url);
  if (url.pathname === "/stream" || url.pathname === "/hang") {
    const hang = url.pathname === "/hang";
    const enc = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async start(c) {
        for (const piece of ["a", "b", "c"]) {
          c.enqueue(enc.encode(piece));
          if (piece !== "c") await sleep(hang ? 60_000 : 3 * BOUND);
        }
        c.close();
      },
      // The server cancels the body when the client goes away.
      cancel: () => void aborted.add(url.pathname),
    });
    return new Response(body, { headers: { "content-type": "text/plain" } });
  }
  return new Response(`${req.method} ${req.url} host=${req.headers.get("host")}`);
}

async function withFront(fn: (base: URL, front: HttpFront) => Promise<void>): Promise<void> {
  const front = serveFront(
    { hostname: "127.0.0.1", port: 0, headerTimeoutMs: BOUND, idleTimeoutMs: BOUND },
    handler,
  );
  try {
    await fn(new URL(`http://127.0.0.1:${front.addr.port}/`), front);
  } finally {
    await front.shutdown();
  }
}

/** The front's timers and lingering connections outlive a test's last await. */
const test = (name: string, fn: (base: URL, front: HttpFront) => Promise<void>) =>
  Deno.test({ name, sanitizeOps: false, sanitizeResources: false, fn: () => withFront(fn) });

const GET = (path: string, extra = "") => `GET ${path} HTTP/1.1\r\nHost: localhost\r\n${extra}\r\n`;

test("a client that sends nothing is closed at the header bound, with no answer", async (base) => {
  const c = await RawConnection.open(base);
  const closed = await c.closed();
  ok(closed, "closed");
  equal(closed.text, "");
  ok(closed.ms >= BOUND - 20 && closed.ms < BOUND + SLACK, `${closed.ms} ms`);
});

/** Sends `text` a byte every 100 ms, until done, the connection is closed or `stop()`. */
function trickle(c: RawConnection, text: string): { stop(): Promise<void> } {
  let stopped = false;
  const sending = (async () => {
    for (const ch of text) {
      if (stopped || !(await c.send(ch))) return;
      await sleep(100);
    }
  })();
  return {
    stop: () => {
      stopped = true;
      return sending;
    },
  };
}

test("a head trickled a byte per 100 ms gets 408 at the bound, the first one's from the accept", async (base) => {
  const c = await RawConnection.open(base);
  await sleep(BOUND - 50);
  const sending = trickle(c, GET("/hello"));
  const res = await c.response();
  const ms = performance.now() - c.openedAt;
  equal(res?.status, 408);
  equal(res.headers.get("connection"), "close");
  equal(JSON.parse(res.body).error.type, "timeout_error");
  // From its first byte it would be BOUND - 50 + BOUND.
  ok(ms >= BOUND - 20 && ms < 2 * BOUND - 100, `${ms} ms from the accept`);
  ok(await c.closed(), "then closed");
  await sending.stop();
});

test("a later head's clock starts at its first byte, not at the previous response", async (base) => {
  const c = await RawConnection.open(base);
  await c.send(GET("/hello"));
  equal((await c.response())?.status, 200);
  await sleep(BOUND / 2);
  const first = performance.now();
  const sending = trickle(c, GET("/hello"));
  const res = await c.response();
  const ms = performance.now() - first;
  equal(res?.status, 408);
  ok(ms >= BOUND - 20 && ms < BOUND + SLACK, `${ms} ms from its first byte`);
  await sending.stop();
  c.close();
});

test("keep-alive: a request sent within the idle bound is served on the same connection; then closed at the bound", async (base) => {
  const c = await RawConnection.open(base);
  for (let i = 0; i < 3; i++) {
    await c.send(GET(`/n${i}`));
    const res = await c.response();
    equal(res?.status, 200);
    equal(res.body, `GET http://localhost/n${i} host=localhost`);
    await sleep(BOUND * 0.6);
  }
  const idleFrom = performance.now() - BOUND * 0.6;
  const closed = await c.closed();
  ok(closed, "closed");
  equal(closed.text, "", "silently: no 408 on an idle connection");
  const ms = performance.now() - idleFrom;
  ok(ms >= BOUND - 20 && ms < BOUND + SLACK, `${ms} ms idle`);
});

test("a response whose chunks come three bounds apart is not cut", async (base) => {
  const c = await RawConnection.open(base);
  await c.send(GET("/stream"));
  const res = await c.response();
  equal(res?.status, 200);
  equal(res.headers.get("transfer-encoding"), "chunked");
  equal(res.body, "abc");
  ok(res.ms >= 6 * BOUND - 20, `${res.ms} ms`);
  ok(await c.closed(), "then idle, and closed");
});

test("pipelined requests are answered in order, HEAD without a body, then the idle close", async (base) => {
  const c = await RawConnection.open(base);
  await c.send(GET("/a") + "HEAD /b HTTP/1.1\r\nHost: x\r\n\r\n" + GET("/c"));
  equal((await c.response())?.body, "GET http://localhost/a host=localhost");
  const head = await c.response(true);
  equal(head?.status, 200);
  ok(Number(head.headers.get("content-length")) > 0, "HEAD gets the length, no body");
  equal((await c.response())?.body, "GET http://localhost/c host=localhost");
  const closed = await c.closed();
  ok(closed && closed.text === "", "idle, closed");
});

test("the handler sees the client's Host; HTTP/1.0 without one is served", async (base) => {
  const c = await RawConnection.open(base);
  await c.send("GET /x?q=1 HTTP/1.1\r\nHost: Kiln.Example:1234\r\n\r\n");
  // Deno builds `req.url` from the Host as sent.
  equal((await c.response())?.body, "GET http://Kiln.Example:1234/x?q=1 host=Kiln.Example:1234");
  await c.send("GET http://other.example/y HTTP/1.1\r\nHost: a\r\n\r\n");
  equal((await c.response())?.body, "GET http://other.example/y host=a");
  c.close();
  const old = await RawConnection.open(base);
  await old.send("GET /z HTTP/1.0\r\n\r\n");
  const res = await old.response();
  equal(res?.status, 200);
  ok(/^GET http:\/\/[^/]+\/z host=null$/.test(res.body), res.body);
  ok(await old.closed(), "HTTP/1.0: closed after the answer");
});

test("refused: an HTTP/2 preface 505, CONNECT 501, a length and a chunking 400", async (base) => {
  const cases: [string, number][] = [
    ["PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505],
    ["CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", 501],
    ["POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400],
  ];
  for (const [text, status] of cases) {
    const c = await RawConnection.open(base);
    await c.send(text);
    const res = await c.response();
    equal(res?.status, status, text);
    equal(res.headers.get("connection"), "close");
    equal(JSON.parse(res.body).error.type, "invalid_request_error");
    ok(await c.closed(), "closed");
  }
});

test("a client that goes away mid-response: the server cancels the response", async (base) => {
  const c = await RawConnection.open(base);
  await c.send(GET("/hang"));
  await sleep(200);
  c.close();
  for (let i = 0; i < 50 && !aborted.has("/hang"); i++) await sleep(50);
  ok(aborted.has("/hang"), "the handler saw the client go");
});

test("shutdown closes idle connections and stops accepting", async (base, front) => {
  const c = await RawConnection.open(base);
  await c.send(GET("/a"));
  equal((await c.response())?.status, 200);
  const t0 = performance.now();
  await front.shutdown();
  const closed = await c.closed();
  ok(closed && performance.now() - t0 < BOUND, "closed by the shutdown, not the idle bound");
  let refused = false;
  try {
    (await Deno.connect({ hostname: "127.0.0.1", port: Number(base.port) })).close();
  } catch {
    refused = true;
  }
  ok(refused, "no longer accepting");
});
