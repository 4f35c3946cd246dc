/**
 * `Http1Framing` on byte streams cut at every boundary: request heads held until whole, bodies by
 * length and chunked (extensions, trailers), pipelined requests, responses by length, chunked,
 * none (HEAD, 1xx, 204, 304) or read until the close, the connection's state throughout, and the
 * heads and bodies it refuses.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { type FramingEvent, Http1Framing, MAX_CHUNK_LINE, MAX_HEAD_BYTES } from "./http_framing.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Feeds `text` cut at `cuts` to one side; returns what was handed on (requests) and events. */
function feed(f: Http1Framing, side: "request" | "response", text: string, cuts: number[] = []) {
  const bytes = enc.encode(text);
  const bounds = [0, ...cuts, bytes.length];
  const out: string[] = [];
  for (let k = 0; k + 1 < bounds.length; k++) {
    const piece = bytes.slice(bounds[k], bounds[k + 1]);
    if (side === "request") { for (const p of f.request(piece)) out.push(dec.decode(p)); }
    else f.response(piece);
  }
  return out;
}

function framing() {
  const events: FramingEvent[] = [];
  return { f: new Http1Framing((e) => events.push(e)), events };
}

const POST = (body: string) =>
  `POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
const CHUNKED_REQ = "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" +
  '5;name=value;q="a b"\r\nhello\r\nA \r\n0123456789\r\n0;last\r\nX-Sum: 1\r\nX-More: 2\r\n\r\n';
const PIPELINE = POST('{"a":1}') + "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n" +
  // Empty lines before a request line are skipped, as hyper skips them.
  CHUNKED_REQ + "\r\n\r\nHEAD /h HTTP/1.0\r\n\r\n";
const PIPELINE_EVENTS: FramingEvent[] = [
  { type: "request", method: "POST", target: "/v1/completions" },
  { type: "request-end" },
  { type: "request", method: "GET", target: "/health" },
  { type: "request-end" },
  { type: "request", method: "POST", target: "/x" },
  { type: "request-end" },
  { type: "request", method: "HEAD", target: "/h" },
  { type: "request-end" },
];

Deno.test("requests cut at every byte boundary: same events, every byte handed on, heads whole", () => {
  const heads = PIPELINE.match(/[A-Z]+ \S+ HTTP\/1\.\d\r\n(?:[^\r]+\r\n)*\r\n/g)!;
  equal(heads.length, 4);
  for (let cut = 0; cut <= PIPELINE.length; cut++) {
    const { f, events } = framing();
    const out = feed(f, "request", PIPELINE, [cut]);
    equal(out.join(""), PIPELINE, `cut at ${cut}`);
    deepStrictEqual(events, PIPELINE_EVENTS, `cut at ${cut}`);
    for (const h of heads) {
      ok(
        out.some((p) => p.replace(/^(\r\n)+/, "") === h),
        `head whole in one piece, cut at ${cut}`,
      );
    }
    equal(f.state, "busy");
  }
  // And one byte at a time.
  const { f, events } = framing();
  const out = feed(f, "request", PIPELINE, [...PIPELINE].map((_, i) => i).slice(1));
  equal(out.join(""), PIPELINE);
  deepStrictEqual(events, PIPELINE_EVENTS);
});

const RESPONSES = "HTTP/1.1 100 Continue\r\n\r\n" +
  'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 7\r\n\r\n{"a":1}' +
  "HTTP/1.1 204 No Content\r\n\r\n" +
  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
  "6;ext\r\ndata: \r\n1\r\nx\r\n0\r\nTrailer-A: b\r\n\r\n" +
  "HTTP/1.1 200 OK\r\ncontent-length: 99\r\n\r\n";

Deno.test("responses cut at every byte boundary: 1xx, length, 204, chunked, HEAD's", () => {
  for (let cut = 0; cut <= RESPONSES.length; cut++) {
    const { f, events } = framing();
    feed(f, "request", PIPELINE);
    feed(f, "response", RESPONSES, [cut]);
    deepStrictEqual(events.slice(PIPELINE_EVENTS.length), [
      { type: "response", status: 100 },
      { type: "response", status: 200 },
      { type: "response-end" },
      { type: "response", status: 204 },
      { type: "response-end" },
      { type: "response", status: 200 },
      { type: "response-end" },
      // To the HEAD: no body, whatever its Content-Length says.
      { type: "response", status: 200 },
      { type: "response-end" },
    ], `cut at ${cut}`);
    equal(f.state, "idle", `cut at ${cut}`);
  }
});

Deno.test("state: head from the start, busy from a head's end to its response's end, then idle", () => {
  const { f } = framing();
  equal(f.state, "head", "the first head is owed before any byte");
  equal(f.partialHead, false);
  deepStrictEqual(f.request(enc.encode("GET / HT")), [], "a head is held until whole");
  equal(f.state, "head");
  equal(f.partialHead, true);
  equal(f.request(enc.encode("TP/1.1\r\nHost: x\r\n\r\n")).length, 1);
  equal(f.state, "busy");
  f.response(enc.encode("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\no"));
  equal(f.state, "busy", "a response under way");
  f.response(enc.encode("k"));
  equal(f.state, "idle");
  f.response(enc.encode("HTTP/1.1 4"));
  equal(f.state, "busy", "a response under way, even one to no request");
  f.response(enc.encode("00 Bad Request\r\ncontent-length: 0\r\n\r\n"));
  equal(f.state, "idle");
  f.request(enc.encode("\r\n"));
  equal(f.state, "head", "an empty line before a request line starts a head");
  equal(f.partialHead, true);
});

Deno.test("a response with neither length nor chunking lasts until the server closes", () => {
  const { f, events } = framing();
  feed(f, "request", "GET /stream HTTP/1.0\r\n\r\n");
  feed(f, "response", "HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: 1\n\n");
  feed(f, "response", "data: 2\n\n".repeat(1000));
  equal(f.state, "busy");
  f.responseClosed();
  equal(f.state, "idle");
  deepStrictEqual(events.slice(-2), [{ type: "response", status: 200 }, {
    type: "response-end",
  }]);
});

Deno.test("304, and a 413 answered before its body: the rest of the body is owed, not a head", () => {
  const { f } = framing();
  feed(f, "request", "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  feed(f, "response", "HTTP/1.1 304 Not Modified\r\ncontent-length: 10\r\n\r\n");
  equal(f.state, "idle");
  feed(f, "request", "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123");
  feed(f, "response", "HTTP/1.1 413 Payload Too Large\r\ncontent-length: 0\r\n\r\n");
  equal(f.state, "head");
  equal(f.partialHead, false, "no head under way: a timeout closes without a 408");
  feed(f, "request", "4".repeat(96));
  equal(f.state, "idle");
});

Deno.test("refused heads: nothing of them handed on, the status to answer", () => {
  const cases: [string, number, RegExp][] = [
    ["PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, /HTTP\/2\.0/],
    ["CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", 501, /CONNECT/],
    ["POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400, /both/],
    ["POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400, /chunked/],
    ["POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, /HTTP\/1\.0/],
    ["POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400, /Content-Length/],
    ["POST / HTTP/1.1\r\nContent-Length: 1, 1\r\n\r\n", 400, /Content-Length/],
    ["POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, /Content-Length/],
    ["GET / HTTP/1.1\r\nX-A: b\r\n c\r\n\r\n", 400, /folding/],
    ["GET / HTTP/1.1\r\nBad Name: b\r\n\r\n", 400, /header/],
    ["GET /\r\n\r\n", 400, /request line/],
    [`GET / HTTP/1.1\r\nX: ${"a".repeat(MAX_HEAD_BYTES)}\r\n\r\n`, 431, /over 65536 bytes/],
  ];
  for (const [text, status, message] of cases) {
    const { f } = framing();
    const before = "GET /ok HTTP/1.1\r\n\r\n";
    deepStrictEqual(feed(f, "request", before + text), [before], text.slice(0, 40));
    equal(f.error?.side, "request");
    equal(f.error?.status, status, text.slice(0, 40));
    ok(message.test(f.error!.message), f.error!.message);
    deepStrictEqual(f.request(enc.encode("GET / HTTP/1.1\r\n\r\n")), [], "nothing after it");
  }
  // The same lengths repeated, and a zero length, are fine.
  const { f } = framing();
  feed(f, "request", "POST / HTTP/1.1\r\nContent-Length: 1\r\ncontent-length: 1\r\n\r\na");
  feed(f, "request", "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  equal(f.error, undefined);
});

Deno.test("a chunked body that cannot be framed: its bytes go on to the server, which refuses them", () => {
  for (
    const bad of ["zz\r\n", "5\r\nhelloX\r\n", `1;${"e".repeat(MAX_CHUNK_LINE)}\r\n`]
  ) {
    const { f } = framing();
    const head = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    const out = feed(f, "request", head + "2\r\nok\r\n" + bad + "more");
    equal(out.join(""), head + "2\r\nok\r\n" + bad + "more");
    equal(f.error?.status, 400, bad);
    equal(f.state, "busy");
  }
});

Deno.test("a switch of protocols or a garbled status line is a response error", () => {
  for (const text of ["HTTP/1.1 101 Switching Protocols\r\n\r\n", "HTP/1.1 200\r\n\r\n"]) {
    const { f } = framing();
    feed(f, "request", "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    feed(f, "response", text);
    equal(f.error?.side, "response", text);
  }
});
