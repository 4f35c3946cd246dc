/**
 * `serve` and `openModel`'s helpers count requests in `dynamo_frontend_requests_total` alike:
 * the same requests over the same engine give the same `status` and `error_type` either way (a
 * success; a constraint the engine refuses, `invalid_request_error`), and a helper's stream
 * whose reader stops is `cancelled`.
 */
import { deepStrictEqual, rejects, strictEqual as equal } from "node:assert/strict";
import { specFiles } from "../adapters/deno/file_source.ts";
import { RequestMetrics } from "../metrics/request_metrics.ts";
import { loadText } from "../text/load.ts";
import { FORTUNE } from "../../test/support/fortune_engine.ts";
import { mockServer } from "../../test/support/server.ts";
import { ChatCompletions } from "./completions.ts";
import type { ChatCompletionRequest } from "./types.ts";

const OUTCOMES = [
  ["success", ""],
  ["error", "invalid_request_error"],
  ["cancelled", ""],
] as const;
const counts = (requests: RequestMetrics) =>
  OUTCOMES.map(([status, error_type]) =>
    requests.requests.get({ model: "fortune", status, error_type })
  );

const hello = {
  model: "fortune",
  messages: [{ role: "user", content: "Hi" }],
  max_tokens: 4,
} satisfies ChatCompletionRequest;
const json = {
  ...hello,
  response_format: { type: "json_object" },
} satisfies ChatCompletionRequest;

Deno.test("serve and the create helpers count the same requests with the same labels", async () => {
  const s = await mockServer();
  try {
    const post = async (body: unknown) => {
      const res = await fetch(new URL("v1/chat/completions", s.url), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      await res.body?.cancel();
      return res.status;
    };
    equal(await post(hello), 200);
    equal(await post(json), 400);
    const requests = new RequestMetrics();
    const text = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" }));
    const chat = new ChatCompletions({
      engine: s.engine,
      text,
      model: "fortune",
      contextLength: 2048,
      requests,
    });
    await chat.create(hello);
    await rejects(chat.create(json));
    const served = counts(s.server.options.requests);
    deepStrictEqual(served, [1, 1, 0]);
    deepStrictEqual(counts(requests), served);
    // A reader that stops early: cancelled, and nothing left in flight.
    const stream = await chat.create({ ...hello, stream: true, max_tokens: 64 });
    for await (const _ of stream) break;
    deepStrictEqual(counts(requests), [1, 1, 1]);
    equal(requests.inflight.get({ model: "fortune" }), 0);
  } finally {
    await s.close();
  }
});
