/**
 * `deno task probe` against the server over the mock engine: every hostile case holds; and
 * against a careless server that answers 200 to everything, the probe reports the failures.
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import { mockServer } from "../../../test/support/server.ts";
import { type CaseResult, probe } from "./probe.ts";

Deno.test("every probe case holds against KilnServer", async () => {
  const corsOrigin = "http://app.example";
  const s = await mockServer({
    apiKey: "k",
    bodyTimeoutMs: 1500,
    maxQueued: 4,
    bindHost: "127.0.0.1",
    corsOrigins: [corsOrigin],
  }, { delayMs: 5 });
  try {
    const results = await probe({
      base: s.url,
      apiKey: "k",
      maxBodyBytes: 1 << 20,
      maxQueued: 4,
      slowWaitSeconds: 6,
      longTokens: 900,
      corsOrigin,
    });
    const failed = results.filter((r: CaseResult) => r.failure !== undefined);
    deepStrictEqual(failed, []);
    ok(results.length >= 37, `${results.length} cases`);
  } finally {
    await s.close();
  }
});

Deno.test("the probe reports a server that lets hostile requests through", async () => {
  const careless = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      await req.body?.cancel();
      return Response.json({ object: "list", data: [{ id: "m" }] });
    },
  );
  try {
    const results = await probe({
      base: new URL(`http://127.0.0.1:${careless.addr.port}/`),
      maxBodyBytes: 1 << 20,
      maxQueued: 2,
      slowWaitSeconds: 3,
      longTokens: 900,
      corsOrigin: "http://app.example",
    });
    const failed = new Set(results.filter((r) => r.failure !== undefined).map((r) => r.name));
    for (const name of results.map((r) => r.name)) {
      if (/\b(415|405|404|413|400|408|429|421|403|204)\b|refused|counted/.test(name)) {
        ok(failed.has(name), `${name} should fail on a careless server`);
      }
    }
  } finally {
    await careless.shutdown();
  }
});
