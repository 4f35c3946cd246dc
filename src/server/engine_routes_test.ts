/**
 * The token-level engine endpoint over real sockets: fortune's WebGPU engine streams the same
 * tokens through `POST /v1/engine/generate` as called directly, as NDJSON chunks that parse as
 * Dynamo's wire output and keep the contract (one terminal chunk, last); `GET /v1/engine/config`
 * is the engine's `EngineConfig`; malformed JSON, a bad field and a token past the vocabulary get
 * typed 400s and the server goes on serving; closing the response cancels the request in the
 * engine; the API key and the methods are enforced as on the OpenAI routes.
 */
import { deepStrictEqual, match, ok, strictEqual as equal } from "node:assert/strict";
import type { LLMEngineOutput, PreprocessedRequest } from "../contract/types.ts";
import { validateStream } from "../contract/validate.ts";
import { requestToWire } from "../contract/wire.ts";
import { bytes, collect, request } from "../../test/support/fortune_engine.ts";
import {
  ndjsonLines,
  postGenerate,
  type Served,
  serveFortune,
} from "../../test/support/engine_route.ts";
import { ENGINE_CONFIG, ENGINE_GENERATE } from "./engine_routes.ts";

const serve = (apiKey?: string): Promise<Served> => serveFortune(apiKey ? { apiKey } : {});
const post = (s: Served, body: string, headers: Record<string, string> = {}) =>
  postGenerate(s.url, body, headers);
const lines = ndjsonLines;

Deno.test("engine endpoint: the engine's own tokens as NDJSON chunks, and its EngineConfig", async () => {
  const s = await serve();
  try {
    const config = await fetch(new URL(ENGINE_CONFIG, s.url));
    equal(config.status, 200);
    deepStrictEqual(await config.json(), JSON.parse(JSON.stringify(s.config)));
    const reqs: PreprocessedRequest[] = [
      request(bytes("The fortune"), { stop_conditions: { max_tokens: 24 } }),
      request(bytes("la la"), {
        stop_conditions: { max_tokens: 12 },
        sampling_options: { temperature: 0.9, seed: 3 },
        output_options: { logprobs: 2 },
      }),
    ];
    for (const req of reqs) {
      const want = await collect(s.engine, req);
      const res = await post(s, JSON.stringify(requestToWire(req)), { "x-request-id": "r-1" });
      equal(res.status, 200);
      equal(res.headers.get("content-type"), "application/x-ndjson");
      equal(res.headers.get("x-request-id"), "r-1");
      const got: LLMEngineOutput[] = [];
      const checked = validateStream(lines(res), { promptTokens: req.token_ids.length });
      for await (const c of checked) got.push(c);
      deepStrictEqual(got.flatMap((c) => c.token_ids), want.ids);
      equal(got.at(-1)!.finish_reason, want.last.finish_reason);
      deepStrictEqual(got.at(-1)!.completion_usage, want.last.completion_usage);
      deepStrictEqual(
        got.flatMap((c) => c.log_probs ?? []),
        want.chunks.flatMap((c) => c.log_probs ?? []),
      );
    }
  } finally {
    await s.close();
  }
});

Deno.test("engine endpoint: bad input is a typed 400, and the server goes on serving", async () => {
  const s = await serve();
  try {
    const vocab = s.engine.vocabSize;
    const cases: [string, RegExp][] = [
      ["{", /not valid JSON|JSON/],
      [JSON.stringify({ model: "fortune" }), /token_ids/],
      [JSON.stringify({ token_ids: [1, -2] }), /token_ids/],
      [JSON.stringify({ token_ids: [1, 2], stop_conditions: { max_tokens: "x" } }), /max_tokens/],
      [JSON.stringify({ token_ids: [1, vocab] }), /vocab/],
    ];
    for (const [body, why] of cases) {
      const res = await post(s, body);
      equal(res.status, 400, body);
      const { error } = await res.json();
      equal(error.code, "InvalidArgument", body);
      match(error.message, why, body);
    }
    // Conditions that could never hold are refused naming their field, each sent twice.
    const base = { token_ids: [1, 2] };
    const named: [Record<string, unknown>, string][] = [
      [
        { ...base, stop_conditions: { max_tokens: 2, min_tokens: 3 } },
        "stop_conditions.min_tokens",
      ],
      [{ ...base, eos_token_ids: [vocab + 5] }, "eos_token_ids"],
      [
        { ...base, stop_conditions: { stop_token_ids: [3, vocab] } },
        "stop_conditions.stop_token_ids",
      ],
      [
        { ...base, stop_conditions: { stop_token_ids_hidden: [vocab] } },
        "stop_conditions.stop_token_ids_hidden",
      ],
      [
        { ...base, sampling_options: { allowed_token_ids: [vocab] } },
        "sampling_options.allowed_token_ids",
      ],
      [
        { ...base, sampling_options: { bad_words_token_ids: [[1], [vocab, 2]] } },
        "sampling_options.bad_words_token_ids[1]",
      ],
      [{ ...base, sampling_options: { top_p: 0 } }, "sampling_options.top_p"],
    ];
    for (const [body, param] of named) {
      for (let twice = 0; twice < 2; twice++) {
        const res = await post(s, JSON.stringify(body));
        equal(res.status, 400, JSON.stringify(body));
        const { error } = await res.json();
        equal(error.code, "InvalidArgument", error.message);
        equal(error.param, param, error.message);
      }
    }
    // The same refusals through the OpenAI route name the OpenAI body's fields.
    const openai: [Record<string, unknown>, string][] = [
      [{ prompt: [1, vocab] }, "prompt"],
      [{ prompt: "Hi", stop_token_ids: [vocab] }, "stop_token_ids"],
      [{ prompt: "Hi", top_p: 0 }, "top_p"],
    ];
    for (const [body, param] of openai) {
      const res = await fetch(new URL("/v1/completions", s.url), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "fortune", max_tokens: 2, ...body }),
      });
      equal(res.status, 400, JSON.stringify(body));
      const { error } = await res.json();
      equal(error.param, param, error.message);
    }
    const wrongMethod = await fetch(new URL(ENGINE_GENERATE, s.url));
    equal(wrongMethod.status, 405);
    await wrongMethod.body?.cancel();
    const res = await post(
      s,
      JSON.stringify({ token_ids: bytes("ok"), stop_conditions: { max_tokens: 3 } }),
    );
    equal(res.status, 200);
    let n = 0;
    for await (const c of lines(res)) n += c.token_ids.length;
    equal(n, 3);
  } finally {
    await s.close();
  }
});

Deno.test("engine endpoint: closing the response cancels the request in the engine", async () => {
  const s = await serve();
  try {
    const before = s.engine.stats.cancelled;
    const res = await post(
      s,
      JSON.stringify({
        token_ids: bytes("A long one"),
        stop_conditions: { max_tokens: 900, ignore_eos: true },
      }),
    );
    equal(res.status, 200);
    const reader = lines(res);
    ok((await reader.next()).value!.token_ids.length > 0);
    await reader.return(undefined);
    await res.body?.cancel().catch(() => {});
    for (let i = 0; i < 200 && s.engine.stats.cancelled === before; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    equal(s.engine.stats.cancelled, before + 1, "the engine saw the request cancelled");
    for (let i = 0; i < 100 && s.engine.usedBlocks > 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    equal(s.engine.usedBlocks, 0, "and freed its blocks");
  } finally {
    await s.close();
  }
});

Deno.test("engine endpoint: the API key guards it as it guards completions", async () => {
  const s = await serve("sekret");
  try {
    for (const auth of [undefined, "Bearer wrong"]) {
      const res = await post(
        s,
        JSON.stringify({ token_ids: [1] }),
        auth ? { authorization: auth } : {},
      );
      equal(res.status, 401);
      await res.body?.cancel();
      const config = await fetch(new URL(ENGINE_CONFIG, s.url), {
        headers: auth ? { authorization: auth } : {},
      });
      equal(config.status, 401);
      await config.body?.cancel();
    }
    const ok200 = await post(
      s,
      JSON.stringify({ token_ids: [256, 65], stop_conditions: { max_tokens: 2 } }),
      { authorization: "Bearer sekret" },
    );
    equal(ok200.status, 200);
    await ok200.body?.cancel();
  } finally {
    await s.close();
  }
});

Deno.test("engine endpoint: every request is counted in dynamo_frontend_requests_total", async () => {
  const s = await serveFortune({ maxQueued: 1 });
  const requests = async () =>
    (await (await fetch(new URL("/metrics", s.url))).text()).split("\n")
      .filter((l) => l.startsWith("dynamo_frontend_requests_total{")).sort();
  try {
    const good = JSON.stringify({ token_ids: bytes("ok"), stop_conditions: { max_tokens: 2 } });
    const res = await post(s, good);
    for await (const _ of lines(res));
    (await post(s, JSON.stringify({ token_ids: [1, s.engine.vocabSize] }))).body?.cancel();
    (await post(s, "{")).body?.cancel();
    // One long request holds the only place; the next is refused 429, then the long one left.
    const long = await post(
      s,
      JSON.stringify({ token_ids: [1], stop_conditions: { max_tokens: 500, ignore_eos: true } }),
    );
    const reader = lines(long);
    await reader.next();
    const busy = await post(s, good);
    equal(busy.status, 429);
    await busy.body?.cancel();
    await reader.return(undefined);
    await long.body?.cancel().catch(() => {});
    for (let i = 0; i < 100 && s.server.inFlight > 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    deepStrictEqual(await requests(), [
      'dynamo_frontend_requests_total{model="fortune",status="cancelled",error_type=""} 1',
      'dynamo_frontend_requests_total{model="fortune",status="error",error_type="invalid_request_error"} 2',
      'dynamo_frontend_requests_total{model="fortune",status="error",error_type="rate_limit_error"} 1',
      'dynamo_frontend_requests_total{model="fortune",status="success",error_type=""} 1',
    ]);
  } finally {
    await s.close();
  }
});
