/**
 * The token-level engine endpoint over real sockets: fortune's WebGPU engine streams the same
 * tokens through `POST /v1/engine/generate` as called directly, as NDJSON chunks that parse as
 * Dynamo's wire output and keep the contract (one terminal chunk, last); `GET /v1/engine/config`
 * is the engine's `EngineConfig`; malformed JSON, a bad field and a token past the vocabulary get
 * typed 400s and the server goes on serving; closing the response cancels the request in the
 * engine; the API key and the methods are enforced as on the OpenAI routes.
 */
import { deepStrictEqual, equal, match, ok } from "node:assert/strict";
import type { LLMEngine } from "../contract/engine.ts";
import type { EngineConfig, LLMEngineOutput, PreprocessedRequest } from "../contract/types.ts";
import { validateStream } from "../contract/validate.ts";
import { parseOutput, requestToWire } from "../contract/wire.ts";
import type { WebGpuEngine } from "../engines/webgpu/engine.ts";
import { bytes, collect, fortuneEngine, request } from "../../test/support/fortune_engine.ts";
import { testServer } from "../../test/support/server.ts";
import { loadText } from "../text/load.ts";
import { specFiles } from "../adapters/deno/file_source.ts";
import { ENGINE_CONFIG, ENGINE_GENERATE } from "./engine_routes.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;

interface Served {
  url: URL;
  engine: WebGpuEngine;
  config: EngineConfig;
  close(): Promise<void>;
}

async function serve(apiKey?: string): Promise<Served> {
  const engine = await fortuneEngine();
  const config = await engine.start(0n);
  const server = testServer(engine as LLMEngine, apiKey ? { apiKey } : {});
  server.ready(config, await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" })));
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, server.fetch);
  return {
    url: new URL(`http://127.0.0.1:${http.addr.port}/`),
    engine,
    config,
    async close() {
      server.abortAll();
      await http.shutdown();
      await engine.cleanup();
    },
  };
}

const post = (s: Served, body: string, headers: Record<string, string> = {}) =>
  fetch(new URL(ENGINE_GENERATE, s.url), {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });

/** The NDJSON lines of a response, each parsed as Dynamo's wire output. */
async function* lines(res: Response): AsyncGenerator<LLMEngineOutput> {
  let buf = "";
  for await (const part of res.body!.pipeThrough(new TextDecoderStream())) {
    buf += part;
    for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
      yield parseOutput(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  }
  equal(buf, "", "every line ends with a newline");
}

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
