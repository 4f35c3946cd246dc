/**
 * For tests: a `KilnServer` over the mock engine with the fortune model's tokenizer, listening
 * on a free loopback port (`Deno.serve`), so hostile requests can go over real sockets.
 */
import { MockEngine, type MockEngineOptions } from "../../src/engines/mock/mod.ts";
import { EngineMetrics } from "../../src/contract/metrics/engine_metrics.ts";
import { RequestMetrics } from "../../src/metrics/request_metrics.ts";
import { specFiles } from "../../src/adapters/deno/file_source.ts";
import { loadText } from "../../src/text/load.ts";
import { ChatTemplate } from "../../src/text/chat.ts";
import type { LLMEngine } from "../../src/contract/engine.ts";
import { KilnServer, type ServerOptions } from "../../src/server/app.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;

export interface MockServer {
  server: KilnServer;
  engine: MockEngine;
  url: URL;
  close(): Promise<void>;
}

/** A `KilnServer` over `engine` with fresh test metrics (call `ready` once the engine started). */
export function testServer(
  engine: LLMEngine,
  options: Partial<Omit<ServerOptions, "engine" | "metrics" | "requests">> = {},
): KilnServer {
  return new KilnServer({
    engine,
    metrics: EngineMetrics.fromHierarchy({
      namespace: "kiln",
      component: "test",
      endpoint: "generate",
      workerId: 1n,
    }),
    requests: new RequestMetrics(),
    ...options,
  });
}

/**
 * `chatTemplate`: the template's text instead of fortune's own (e.g. `DEFAULT_CHAT_TEMPLATE`, which
 * shows no tool-call convention).
 */
export async function mockServer(
  options: Partial<Omit<ServerOptions, "engine" | "metrics" | "requests">> = {},
  engineOptions: MockEngineOptions = {},
  chatTemplate?: string,
): Promise<MockServer> {
  const engine = new MockEngine({ model: "fortune", vocabSize: 260, ...engineOptions });
  const server = testServer(engine, options);
  const [config, text] = await Promise.all([
    engine.start(1n),
    loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" })),
  ]);
  server.ready(
    config,
    chatTemplate === undefined ? text : { ...text, chat: new ChatTemplate(chatTemplate) },
  );
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, server.fetch);
  return {
    server,
    engine,
    url: new URL(`http://127.0.0.1:${http.addr.port}/`),
    async close() {
      server.abortAll();
      await engine.cleanup();
      await http.shutdown();
    },
  };
}
