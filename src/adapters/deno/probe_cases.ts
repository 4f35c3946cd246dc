/**
 * The hostile requests `deno task probe` sends a running server, each with what a safe server
 * answers. A case returns `undefined` when the server held, or what went wrong.
 */
import { ACCESS_CASES } from "./probe_access.ts";
import { expectStatus, rawStatus } from "./probe_checks.ts";
import type { ProbeCase } from "./probe_client.ts";

const wrongType = (type: string | undefined): ProbeCase => ({
  name: `Content-Type ${type ?? "(none)"} gets 415`,
  run: async (p) => expectStatus(await p.post("/v1/completions", p.completion(), type), 415),
});

const hostTrick = (method: string, path: string, host: (h: string) => string): ProbeCase => ({
  name: `${method} ${path} with Host ${JSON.stringify(host("H"))} gets 400`,
  run: async (p) => {
    const body = p.completion();
    const r = await p.raw([
      `${method} ${path} HTTP/1.1`,
      `Host: ${host(p.host)}`,
      ...p.authLines(),
      "Content-Type: application/json",
      `Content-Length: ${body.length}`,
      "Connection: close",
    ], { pieces: method === "POST" ? [new TextEncoder().encode(body)] : [] });
    return rawStatus(r, 400);
  },
});

/** `body` (its `$M` replaced by the served model) must get 400 and a short error. */
const bad400 = (name: string, body: string | Uint8Array): ProbeCase => ({
  name: `${name} gets 400`,
  run: async (p) => {
    const sent = typeof body === "string" ? body.replace("$M", p.model) : body;
    const res = await p.post("/v1/completions", sent, "application/json");
    const text = await res.text();
    if (res.status !== 400) return `HTTP ${res.status}: ${text.slice(0, 200)}`;
    if (text.length > 4096) return `a ${text.length}-byte error body: the bad value is echoed`;
    return undefined;
  },
});

const huge = "A".repeat(800_000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const CASES: ProbeCase[] = [
  {
    name: "GET /health is 200 ready",
    run: async (p) => expectStatus(await p.fetch("/health"), 200),
  },
  {
    name: "a JSON completion is 200",
    run: async (p) =>
      expectStatus(await p.post("/v1/completions", p.completion(), "application/json"), 200),
  },
  wrongType("text/plain"),
  wrongType("application/x-www-form-urlencoded"),
  wrongType("multipart/form-data; boundary=x"),
  wrongType(undefined),
  wrongType("application/json; charset=iso-8859-1"),
  hostTrick("GET", "/health", (h) => `${h}/v1/models?`),
  hostTrick("POST", "/health", (h) => `${h}/v1/completions?`),
  hostTrick("GET", "/health", (h) => `user@${h}`),
  hostTrick("GET", "/health", (h) => `${h}#`),
  hostTrick("GET", "/health", () => ""),
  ...ACCESS_CASES,
  {
    name: "GET /v1/completions gets 405 with Allow",
    run: async (p) => expectStatus(await p.fetch("/v1/completions"), 405, "allow"),
  },
  {
    name: "POST /health gets 405 with Allow",
    run: async (p) => expectStatus(await p.post("/health", "{}", "application/json"), 405, "allow"),
  },
  {
    name: "an unknown route gets 404",
    run: async (p) => expectStatus(await p.fetch("/v1/nothing-here"), 404),
  },
  {
    name: "a wrong API key gets 401 with WWW-Authenticate",
    run: async (p) => {
      if (p.o.apiKey === undefined) return undefined; // a keyless server: nothing to check
      const res = await fetch(new URL("/v1/models", p.o.base), {
        headers: { authorization: `Bearer ${p.o.apiKey}x` },
      });
      return await expectStatus(res, 401, "www-authenticate");
    },
  },
  {
    name: "a Content-Length over the limit gets 413 before the body is sent",
    run: async (p) =>
      rawStatus(
        await p.raw([
          "POST /v1/completions HTTP/1.1",
          `Host: ${p.host}`,
          ...p.authLines(),
          "Content-Type: application/json",
          `Content-Length: ${p.o.maxBodyBytes * 4}`,
          "Connection: close",
        ]),
        413,
      ),
  },
  {
    name: "a chunked body over the limit gets 413",
    run: async (p) => {
      const piece = new TextEncoder().encode(`10000\r\n${"x".repeat(0x10000)}\r\n`);
      const n = Math.ceil(p.o.maxBodyBytes / 0x10000) + 2;
      return rawStatus(
        await p.raw([
          "POST /v1/completions HTTP/1.1",
          `Host: ${p.host}`,
          ...p.authLines(),
          "Content-Type: application/json",
          "Transfer-Encoding: chunked",
          "Connection: close",
        ], { pieces: Array.from({ length: n }, () => piece) }),
        413,
      );
    },
  },
  bad400(
    "an 800 KB bad temperature (not echoed back)",
    `{"model":"$M","prompt":"x","temperature":"${huge}"}`,
  ),
  {
    name: "an 800 KB unknown model gets 404, not echoed back",
    run: async (p) => {
      const res = await p.post(
        "/v1/completions",
        JSON.stringify({ model: huge, prompt: "x" }),
        "application/json",
      );
      const text = await res.text();
      if (res.status !== 404) return `HTTP ${res.status}: ${text.slice(0, 200)}`;
      return text.length > 4096 ? `a ${text.length}-byte error body` : undefined;
    },
  },
  bad400("malformed JSON", "{not json"),
  bad400("a JSON array body", "[1,2,3]"),
  bad400("JSON null", "null"),
  bad400("JSON nested 100k deep", "[".repeat(100_000) + "]".repeat(100_000)),
  bad400("a body that is not UTF-8", new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])),
  bad400("n as a string", '{"model":"$M","prompt":"x","n":"3"}'),
  bad400("negative max_tokens", '{"model":"$M","prompt":"x","max_tokens":-1}'),
  {
    name: "a body sent one byte a second gets 408",
    run: async (p) => {
      const body = new TextEncoder().encode(p.completion());
      const r = await p.raw([
        "POST /v1/completions HTTP/1.1",
        `Host: ${p.host}`,
        ...p.authLines(),
        "Content-Type: application/json",
        `Content-Length: ${body.length}`,
        "Connection: close",
      ], {
        pieces: Array.from(body, (b) => new Uint8Array([b])),
        pauseMs: 1000,
        timeoutMs: p.o.slowWaitSeconds * 1000,
      });
      return r === undefined ? `no answer within ${p.o.slowWaitSeconds} s` : rawStatus(r, 408);
    },
  },
  {
    name: "a connection closed mid-body leaves the server serving",
    run: async (p) => {
      await p.raw([
        "POST /v1/completions HTTP/1.1",
        `Host: ${p.host}`,
        ...p.authLines(),
        "Content-Type: application/json",
        "Content-Length: 1000",
      ], { pieces: [new TextEncoder().encode('{"model":')], closeAfterSend: true });
      await sleep(200);
      return await expectStatus(await p.fetch("/health"), 200);
    },
  },
  {
    name: "a stream dropped mid-way is cancelled (in-flight gauge returns)",
    run: async (p) => {
      const gauge = "dynamo_frontend_inflight_requests";
      const before = await p.metric(gauge);
      if (before === undefined) return "cannot read /metrics (pass --api-key?)";
      const ctrl = new AbortController();
      const res = await p.fetch("/v1/completions", {
        method: "POST",
        signal: ctrl.signal,
        headers: { "content-type": "application/json" },
        body: p.completion({ max_tokens: p.o.longTokens, stream: true, ignore_eos: true }),
      });
      if (res.status !== 200) return `HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`;
      await res.body!.getReader().read();
      ctrl.abort();
      for (let i = 0; i < 50; i++) {
        await sleep(100);
        if ((await p.metric(gauge)) === before) return undefined;
      }
      return `${gauge} stayed above ${before} for 5 s after the client left`;
    },
  },
  {
    name: "every refused completion is counted in dynamo_frontend_requests_total",
    run: async (p) => {
      const name = "dynamo_frontend_requests_total";
      const before = await p.metric(name, ['status="error"']);
      if (before === undefined) return "cannot read /metrics (pass --api-key?)";
      const sent = [
        await p.post("/v1/completions", p.completion(), "text/plain"),
        await p.post("/v1/completions", "{oops", "application/json"),
        await p.post("/v1/chat/completions", '{"model":"m"}', "application/json"),
        await p.fetch("/v1/completions"),
        await p.post("/v1/completions", p.completion({ temperature: 9 }), "application/json"),
      ];
      await Promise.all(sent.map((r) => r.body?.cancel()));
      const after = await p.metric(name, ['status="error"']);
      return after === before! + sent.length
        ? undefined
        : `${sent.length} refused, the error count went ${before} -> ${after}`;
    },
  },
  {
    name: "past --max-queued, 429 with Retry-After",
    run: async (p) => {
      const ctrl = new AbortController();
      const body = p.completion({ max_tokens: p.o.longTokens, stream: true, ignore_eos: true });
      const all = await Promise.allSettled(
        Array.from({ length: p.o.maxQueued + 4 }, () =>
          p.fetch("/v1/completions", {
            method: "POST",
            signal: ctrl.signal,
            headers: { "content-type": "application/json" },
            body,
          })),
      );
      const res = all.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
      const limited = res.filter((r) => r.status === 429);
      const retry = limited.every((r) => r.headers.get("retry-after"));
      ctrl.abort();
      await Promise.all(res.map((r) => r.body?.cancel().catch(() => {})));
      await sleep(500);
      if (limited.length === 0) {
        return `no 429 among ${res.length} (statuses ${[...new Set(res.map((r) => r.status))]})`;
      }
      return retry ? undefined : "429 without Retry-After";
    },
  },
];
