/**
 * For tests: an engine served with Qwen3's template (`qwen_text.ts`) by a test `KilnServer` on a
 * free loopback port, and an `openai` client of it.
 */
import OpenAI from "openai";
import type { LLMEngine } from "../../src/contract/engine.ts";
import type { KilnServer } from "../../src/server/app.ts";
import { qwen } from "./qwen_text.ts";
import { testServer } from "./server.ts";

/** A served engine, its addresses and a client of it. */
export interface QwenServer<E extends LLMEngine> {
  /** The engine, started. */
  engine: E;
  /** The server over it, ready with `qwen`. */
  server: KilnServer;
  /** The server's origin, `http://127.0.0.1:<port>`. */
  url: string;
  /** Its OpenAI base URL, `<url>/v1`. */
  baseURL: string;
  /** An `openai` client of `baseURL` that does not retry. */
  client: OpenAI;
  /** Stops listening. */
  close(): Promise<void>;
}

/** `engine` started and served with `qwen`'s text. */
export async function serveQwen<E extends LLMEngine>(engine: E): Promise<QwenServer<E>> {
  const server = testServer(engine);
  server.ready(await engine.start(1n), qwen);
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, server.fetch);
  const url = `http://127.0.0.1:${http.addr.port}`;
  const baseURL = `${url}/v1`;
  const client = new OpenAI({ baseURL, apiKey: "x", maxRetries: 0 });
  return { engine, server, url, baseURL, client, close: () => http.shutdown() };
}
