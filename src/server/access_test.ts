/**
 * Host and Origin checks (DNS rebinding), CORS for listed origins and requests without `Host`,
 * in-process through `KilnServer.fetch` over the mock engine and over real sockets.
 */
import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { Access, canonicalName, CORS_MAX_AGE, isLoopback } from "./access.ts";
import { mockServer } from "../../test/support/server.ts";
import { rawRequest } from "../adapters/deno/raw_http.ts";

interface Sent {
  host?: string;
  origin?: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

/** A request as Deno hands one over: `req.url` built from the `Host` it carries. */
function request(path: string, s: Sent = {}): Request {
  const host = s.host ?? "localhost:8080";
  return new Request(`http://${host}${path}`, {
    method: s.method ?? (s.body === undefined ? "GET" : "POST"),
    headers: {
      host,
      ...(s.origin === undefined ? {} : { origin: s.origin }),
      ...(s.body === undefined ? {} : { "content-type": "application/json" }),
      ...s.headers,
    },
    ...(s.body === undefined ? {} : { body: s.body }),
  });
}

type Server = Awaited<ReturnType<typeof mockServer>>;

/** Status and body of `path` sent to `s` in-process. */
async function send(s: Server, path: string, sent: Sent = {}) {
  const res = await s.server.fetch(request(path, sent));
  const text = await res.text();
  return { status: res.status, headers: res.headers, text };
}

const completion = JSON.stringify({ model: "fortune", prompt: "Hello", max_tokens: 3 });

Deno.test("canonical names; loopback is localhost, 127.0.0.0/8 and [::1] only", () => {
  equal(canonicalName("LocalHost."), "localhost");
  equal(canonicalName("::1"), "[::1]");
  equal(canonicalName("[0:0:0:0:0:0:0:1]"), "[::1]");
  equal(canonicalName("127.1"), "127.0.0.1");
  equal(canonicalName("a/b"), undefined);
  equal(canonicalName("kiln.lan:80"), undefined);
  for (const n of ["localhost", "127.0.0.1", "127.200.3.4", "[::1]"]) ok(isLoopback(n), n);
  for (
    const n of ["0.0.0.0", "[::]", "127.0.0.1.evil.example", "localhost.evil.example", "[::2]"]
  ) {
    ok(!isLoopback(n), n);
  }
});

Deno.test("a loopback bind answers loopback Host names only: the rebinding request gets 421", async () => {
  const s = await mockServer({ bindHost: "127.0.0.1" });
  try {
    for (const host of ["localhost:8080", "127.0.0.1:9", "127.9.8.7", "[::1]:8080", "LOCALHOST"]) {
      equal((await send(s, "/health", { host })).status, 200, host);
    }
    for (const host of ["evil.example:8080", "0.0.0.0:8080", "127.0.0.1.evil.example", "[::2]"]) {
      equal((await send(s, "/health", { host })).status, 421, host);
    }
    // What the page on a rebound name sends: its own name as Host and Origin.
    const rebound = await send(s, "/v1/completions", {
      host: "evil.example:8080",
      origin: "http://evil.example:8080",
      body: completion,
    });
    equal(rebound.status, 421);
    const { error } = JSON.parse(rebound.text);
    equal(error.type, "invalid_request_error");
    equal(error.code, "host_not_allowed");
    ok(error.message.includes('"evil.example"') && error.message.includes("--allowed-hosts"));
    // An absolute request target names the host too (Deno builds `req.url` from it).
    const absolute = new Request("http://evil.example/health", { headers: { host: "localhost" } });
    equal((await s.server.fetch(absolute)).status, 421);
  } finally {
    await s.close();
  }
});

Deno.test("a foreign Origin gets 403; same-origin and no Origin are served", async () => {
  const s = await mockServer({ bindHost: "127.0.0.1" });
  try {
    const host = "localhost:8080";
    equal((await send(s, "/health", { host, origin: "http://localhost:8080" })).status, 200);
    equal((await send(s, "/v1/models", { host })).status, 200);
    for (const origin of ["http://evil.example", "http://localhost:9999", "null", "https://x"]) {
      const r = await send(s, "/v1/completions", { host, origin, body: completion });
      equal(r.status, 403, origin);
      equal(JSON.parse(r.text).error.code, "origin_not_allowed");
      equal(r.headers.get("access-control-allow-origin"), null);
    }
    // No CORS configured: no CORS headers at all, not even on a same-origin answer.
    const same = await send(s, "/health", { host, origin: "http://localhost:8080" });
    equal(same.headers.get("vary"), null);
  } finally {
    await s.close();
  }
});

Deno.test("CORS: a listed origin's preflight is 204 with its headers; other origins are refused", async () => {
  const app = "http://app.example:3000";
  const s = await mockServer({ bindHost: "127.0.0.1", corsOrigins: [app], apiKey: "k" });
  try {
    const preflight = (origin: string, extra: Record<string, string> = {}) =>
      send(s, "/v1/chat/completions", {
        method: "OPTIONS",
        origin,
        headers: {
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization, content-type, x-stainless-os",
          ...extra,
        },
      });
    const ok204 = await preflight(app);
    equal(ok204.status, 204, ok204.text);
    equal(ok204.text, "");
    const h = ok204.headers;
    equal(h.get("access-control-allow-origin"), app);
    ok(/\bOrigin\b/.test(h.get("vary") ?? ""), h.get("vary") ?? "");
    deepStrictEqual(h.get("access-control-allow-methods")?.split(", "), ["GET", "HEAD", "POST"]);
    const allowed = h.get("access-control-allow-headers")!.toLowerCase().split(", ");
    for (const name of ["authorization", "content-type", "x-stainless-os"]) {
      ok(allowed.includes(name), `${name} in ${allowed}`);
    }
    equal(h.get("access-control-max-age"), String(CORS_MAX_AGE));
    equal(h.get("access-control-allow-credentials"), null);
    equal(h.get("access-control-allow-private-network"), null);
    const pna = await preflight(app, { "access-control-request-private-network": "true" });
    equal(pna.headers.get("access-control-allow-private-network"), "true");
    for (
      const origin of ["http://evil.example", "https://app.example:3000", "http://app.example"]
    ) {
      const r = await preflight(origin);
      equal(r.status, 403, origin);
      equal(r.headers.get("access-control-allow-origin"), null);
      equal(JSON.parse(r.text).error.code, "origin_not_allowed");
    }
  } finally {
    await s.close();
  }
});

Deno.test("CORS: answers to a listed origin carry the headers: whole, streamed and errors", async () => {
  const app = "https://app.example";
  const s = await mockServer({ bindHost: "127.0.0.1", corsOrigins: [app], apiKey: "k" });
  try {
    const auth = { authorization: "Bearer k" };
    const cors = (r: { headers: Headers }) => {
      equal(r.headers.get("access-control-allow-origin"), app);
      ok(/\bOrigin\b/.test(r.headers.get("vary") ?? ""));
      equal(r.headers.get("access-control-allow-credentials"), null);
    };
    const whole = await send(s, "/v1/completions", {
      origin: app,
      headers: auth,
      body: completion,
    });
    equal(whole.status, 200, whole.text);
    cors(whole);
    ok(/Retry-After/.test(whole.headers.get("access-control-expose-headers") ?? ""));
    const stream = await send(s, "/v1/completions", {
      origin: app,
      headers: auth,
      body: JSON.stringify({ model: "fortune", prompt: "Hi", max_tokens: 3, stream: true }),
    });
    equal(stream.status, 200);
    equal(stream.headers.get("content-type"), "text/event-stream");
    cors(stream);
    ok(stream.text.trimEnd().endsWith("data: [DONE]"), stream.text);
    const noKey = await send(s, "/v1/completions", { origin: app, body: completion });
    equal(noKey.status, 401);
    cors(noKey);
    ok(/WWW-Authenticate/.test(noKey.headers.get("access-control-expose-headers") ?? ""));
    const bad = await send(s, "/v1/completions", { origin: app, headers: auth, body: "{oops" });
    equal(bad.status, 400);
    cors(bad);
    // No Origin: no Allow-Origin, but Vary: Origin, since the answer depends on it.
    const plain = await send(s, "/v1/models", { headers: auth });
    equal(plain.headers.get("access-control-allow-origin"), null);
    equal(plain.headers.get("vary"), "Origin");
    const foreign = await send(s, "/v1/models", { origin: "http://evil.example", headers: auth });
    equal(foreign.status, 403);
    equal(foreign.headers.get("access-control-allow-origin"), null);
  } finally {
    await s.close();
  }
});

Deno.test("allowedHosts adds names ('*': any Host, Origins still checked); no bind or a non-loopback one: as before", async () => {
  const check = (o: ConstructorParameters<typeof Access>[0], host: string, origin?: string) => {
    try {
      new Access(o).check(request("/health", { host, ...(origin ? { origin } : {}) }));
      return 200;
    } catch (e) {
      return (e as { status: number }).status;
    }
  };
  const lan = { bindHost: "127.0.0.1", allowedHosts: ["Kiln.LAN"] };
  equal(check(lan, "kiln.lan:8080"), 200);
  equal(check(lan, "kiln.lan:8080", "http://kiln.lan:8080"), 200);
  equal(check(lan, "localhost:8080"), 200);
  equal(check(lan, "evil.example"), 421);
  const any = { bindHost: "127.0.0.1", allowedHosts: ["*"] };
  equal(check(any, "evil.example"), 200);
  equal(check(any, "evil.example", "http://evil.example"), 200, "same-origin with its Host");
  equal(check(any, "evil.example", "http://other.example"), 403);
  const bound = { bindHost: "192.168.1.5", allowedHosts: ["kiln.lan"] };
  equal(check(bound, "192.168.1.5:8080"), 200, "the bound address itself");
  equal(check(bound, "other.lan"), 421);
  for (const open of [{ bindHost: "0.0.0.0" }, { bindHost: "::" }, { bindHost: "10.0.0.2" }, {}]) {
    equal(check(open, "evil.example:8080", "http://elsewhere.example"), 200, JSON.stringify(open));
  }
  const s = await mockServer({ bindHost: "0.0.0.0" });
  try {
    const r = await send(s, "/v1/completions", {
      host: "evil.example",
      origin: "http://evil.example",
      body: completion,
    });
    equal(r.status, 200, r.text);
  } finally {
    await s.close();
  }
});

Deno.test("bad access options are refused: '*' or a URL as an origin, a port in a host name", () => {
  throws(() => new Access({ corsOrigins: ["*"] }), /"\*" is refused/);
  for (const o of ["app.example", "http://app.example/path", "http://u@app.example", "null"]) {
    throws(() => new Access({ corsOrigins: [o] }), TypeError, o);
  }
  throws(() => new Access({ allowedHosts: ["kiln.lan:80"] }), /no port/);
  throws(() => new Access({ bindHost: "a/b" }), TypeError);
  const a = new Access({ corsOrigins: ["HTTP://App.Example/"] });
  equal(
    a.preflight(request("/", {
      method: "OPTIONS",
      origin: "http://app.example",
      headers: { "access-control-request-method": "POST" },
    }))?.status,
    204,
  );
});

Deno.test("over a socket: HTTP/1.0 without Host is served; an empty or bad Host gets 400", async () => {
  const s = await mockServer({ bindHost: "127.0.0.1", corsOrigins: ["http://app.example"] });
  try {
    const old = await rawRequest(s.url, ["GET /health HTTP/1.0"]);
    equal(old?.status, 200, old?.body ?? "no response");
    equal(JSON.parse(old!.body).status, "ready");
    // Deno's `Request` has no HTTP version and Deno itself accepts HTTP/1.1 without Host, so
    // the server cannot tell this from HTTP/1.0: it is served as addressed to the bound address.
    const noHost11 = await rawRequest(s.url, ["GET /health HTTP/1.1", "Connection: close"]);
    equal(noHost11?.status, 200);
    const raw = (host: string) =>
      rawRequest(s.url, ["GET /health HTTP/1.1", `Host: ${host}`, "Connection: close"]);
    equal((await raw(""))?.status, 400);
    equal((await raw("localhost:99999"))?.status, 400);
    equal((await raw("evil.example"))?.status, 421);
    equal((await raw(s.url.host))?.status, 200);
    // No Host and a foreign Origin: not same-origin with anything, so refused.
    const foreign = await rawRequest(s.url, [
      "GET /health HTTP/1.0",
      "Origin: http://evil.example",
    ]);
    equal(foreign?.status, 403);
    const listed = await rawRequest(s.url, ["GET /health HTTP/1.0", "Origin: http://app.example"]);
    equal(listed?.status, 200);
    equal(listed?.headers.get("access-control-allow-origin"), "http://app.example");
  } finally {
    await s.close();
  }
});
