/**
 * For tests of the token-level engine endpoint: a `KilnServer` over fortune's `WebGpuEngine` on a
 * free loopback port, a POST to `/v1/engine/generate`, and the NDJSON lines of its answer.
 */
import { strictEqual as equal } from "node:assert/strict";
import type { LLMEngine } from "../../src/contract/engine.ts";
import type { EngineConfig, LLMEngineOutput } from "../../src/contract/types.ts";
import { parseOutput } from "../../src/contract/wire.ts";
import type { WebGpuEngine } from "../../src/engines/webgpu/engine.ts";
import type { WebGpuEngineOptions } from "../../src/engines/webgpu/engine.ts";
import type { KilnServer } from "../../src/server/app.ts";
import { ENGINE_GENERATE } from "../../src/server/engine_routes.ts";
import { specFiles } from "../../src/adapters/deno/file_source.ts";
import { loadText } from "../../src/text/load.ts";
import { FORTUNE, fortuneEngine } from "./fortune_engine.ts";
import { testServer } from "./server.ts";

/** A started fortune engine behind a listening `KilnServer`. */
export interface Served {
  url: URL;
  server: KilnServer;
  engine: WebGpuEngine;
  config: EngineConfig;
  close(): Promise<void>;
}

/** Serve fortune's engine (with `engine` options) over HTTP, with the server's `options`. */
export async function serveFortune(
  options: Parameters<typeof testServer>[1] = {},
  engine: Partial<WebGpuEngineOptions> = {},
): Promise<Served> {
  const e = await fortuneEngine(engine);
  const config = await e.start(0n);
  const server = testServer(e as LLMEngine, options);
  server.ready(config, await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" })));
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, server.fetch);
  return {
    url: new URL(`http://127.0.0.1:${http.addr.port}/`),
    server,
    engine: e,
    config,
    async close() {
      server.abortAll();
      await http.shutdown();
      await e.cleanup();
    },
  };
}

/** POST `body` to the engine endpoint of `url`. */
export const postGenerate = (
  url: URL | string,
  body: string,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Response> =>
  fetch(new URL(ENGINE_GENERATE, url), {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
    ...(signal ? { signal } : {}),
  });

/** The NDJSON lines of a response, each parsed as Dynamo's wire output. */
export async function* ndjsonLines(res: Response): AsyncGenerator<LLMEngineOutput> {
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
