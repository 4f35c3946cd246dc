/**
 * For usage tests: a `KilnServer` over a `ChunkedEngine` on a loopback port, each route called
 * whole or streamed and read the way a client reads it (JSON, server-sent events, NDJSON), the
 * usage it reported normalised, and the `dynamo_frontend_*` counters scraped from `/metrics` before
 * and after, so a test compares both with a count it makes itself. `expectedTokens` is that count,
 * from the script and the tokenizer alone.
 */
import { strictEqual as equal } from "node:assert/strict";
import { specFiles } from "../../src/adapters/deno/file_source.ts";
import { EngineMetrics } from "../../src/contract/metrics/engine_metrics.ts";
import { RequestMetrics } from "../../src/metrics/request_metrics.ts";
import { KilnServer } from "../../src/server/app.ts";
import { ChatTemplate } from "../../src/text/chat.ts";
import { loadText } from "../../src/text/load.ts";
import type { TextTokenizer } from "../../src/text/tokenizer.ts";
import { ChunkedEngine } from "./chunked_engine.ts";
import { scrapeSum } from "./scrape.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;

/** A route's reply as the client saw it. */
export interface Seen {
  status: number;
  /** The text streamed or answered (content, or the completion's text). */
  text: string;
  /** The finish reason (chat, completions), or the response's status (Responses API). */
  finish: string | undefined;
  /** The usage reported, normalised; undefined when none reached the client. */
  usage?: { prompt: number; completion: number; total: number } | undefined;
  /** Chat: the names of the tool calls. */
  calls: string[];
  /** Whether an error (event, or an error status) reached the client. */
  error: boolean;
}

/** The `dynamo_frontend_*` numbers a test compares. */
export interface Counts {
  outputSum: number;
  outputCount: number;
  inputSum: number;
  success: number;
  cancelled: number;
  error: number;
}

export interface UsageServer {
  engine: ChunkedEngine;
  tokenizer: TextTokenizer;
  base: string;
  /** `fetch`, replaced by a test to run a mutant between client and server. */
  fetch: typeof fetch;
  counts(): Promise<Counts>;
  close(): Promise<void>;
}

/** A server over a `ChunkedEngine` of `chunk` tokens a chunk (`template`: a chat template file). */
export async function usageServer(chunk: number, template?: URL): Promise<UsageServer> {
  const text = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" }));
  const engine = new ChunkedEngine(text.tokenizer, chunk);
  const config = await engine.start(1n);
  const metrics = EngineMetrics.fromHierarchy(
    { namespace: "ns", component: "kiln", endpoint: "generate", workerId: 1n },
    config,
  );
  const server = new KilnServer({ engine, metrics, requests: new RequestMetrics() });
  const chat = template ? new ChatTemplate(Deno.readTextFileSync(template)) : text.chat;
  server.ready(config, { ...text, chat });
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, server.fetch);
  const base = `http://127.0.0.1:${http.addr.port}`;
  return {
    engine,
    tokenizer: text.tokenizer,
    base,
    fetch: (input, init) => fetch(input, init),
    async counts() {
      const t = await (await fetch(`${base}/metrics`)).text();
      const by = (status: string) => scrapeSum(t, "dynamo_frontend_requests_total", { status });
      return {
        outputSum: scrapeSum(t, "dynamo_frontend_output_sequence_tokens_sum"),
        outputCount: scrapeSum(t, "dynamo_frontend_output_sequence_tokens_count"),
        inputSum: scrapeSum(t, "dynamo_frontend_input_sequence_tokens_sum"),
        success: by("success"),
        cancelled: by("cancelled"),
        error: by("error"),
      };
    },
    async close() {
      server.abortAll();
      await http.shutdown();
    },
  };
}

/** Scrape until one more request than `before` has ended (its count is taken after its reply). */
export async function settled(s: UsageServer, before: Counts): Promise<Counts> {
  const ended = (c: Counts) => c.success + c.cancelled + c.error;
  for (let i = 0; i < 1000; i++) {
    const now = await s.counts();
    if (ended(now) > ended(before)) return now;
  }
  throw new Error("the request was never counted as ended");
}

/**
 * The tokens an engine of `chunk`-token chunks generates for `script` before it ends: all of
 * them (EOS), `maxTokens`, `at` (held or failed there), or, with a stop string, every token up
 * to the end of the chunk whose tokens completed it (the engine produced that whole chunk).
 */
export function expectedTokens(
  tokenizer: TextTokenizer,
  script: string,
  chunk: number,
  end: { maxTokens?: number; stop?: string; at?: number },
): number {
  const ids = tokenizer.encode(script, { addSpecial: false });
  if (end.at !== undefined) return end.at;
  if (end.maxTokens !== undefined) return Math.min(end.maxTokens, ids.length);
  if (end.stop === undefined) return ids.length;
  for (let k = 1; k <= ids.length; k++) {
    if (tokenizer.decode(ids.slice(0, k)).includes(end.stop)) {
      return Math.min(Math.ceil(k / chunk) * chunk, ids.length);
    }
  }
  return ids.length;
}

/** Server-sent events' `data:` payloads, parsed (`[DONE]` left out). */
export function sseData(body: string): Record<string, unknown>[] {
  return body.split("\n").filter((l) => l.startsWith("data: ") && l !== "data: [DONE]")
    .map((l) => JSON.parse(l.slice(6)));
}

/** The routes whose usage a test reads. */
export type Route = "chat" | "completions" | "responses";
const PATHS: Record<Route, string> = {
  chat: "/v1/chat/completions",
  completions: "/v1/completions",
  responses: "/v1/responses",
};

// Replies are read loosely, as a client's JSON.parse gives them.
// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

const normal = (u: Json | undefined, route: Route) =>
  u === undefined || u === null
    ? undefined
    : route === "responses"
    ? { prompt: u.input_tokens, completion: u.output_tokens, total: u.total_tokens }
    : { prompt: u.prompt_tokens, completion: u.completion_tokens, total: u.total_tokens };

/** A whole reply's fields as a `Seen`. */
function wholeSeen(route: Route, status: number, j: Json): Seen {
  const seen: Seen = { status, text: "", finish: undefined, calls: [], error: status >= 400 };
  if (status >= 400) return seen;
  if (route === "responses") {
    for (const item of j.output ?? []) {
      for (const c of item.content ?? []) seen.text += c.text ?? "";
      if (item.type === "function_call") seen.calls.push(item.name);
    }
    seen.finish = j.status;
  } else {
    const c = j.choices[0];
    seen.text = (route === "chat" ? c.message.content : c.text) ?? "";
    seen.finish = c.finish_reason;
    for (const t of c.message?.tool_calls ?? []) seen.calls.push(t.function.name);
  }
  seen.usage = normal(j.usage, route);
  return seen;
}

/** A stream's events joined into a `Seen`. */
export function streamSeen(route: Route, status: number, events: Json[]): Seen {
  const seen: Seen = { status, text: "", finish: undefined, calls: [], error: status >= 400 };
  for (const e of events) {
    if (e.error !== undefined || e.type === "error") seen.error = true;
    if (route === "responses") {
      if (e.type === "response.output_text.delta") seen.text += e.delta;
      if (e.type === "response.output_item.added" && e.item.type === "function_call") {
        seen.calls.push(e.item.name);
      }
      if (/^response\.(completed|incomplete|failed)$/.test(e.type)) {
        seen.finish = e.response.status;
        seen.usage = normal(e.response.usage, route);
      }
      continue;
    }
    const c = e.choices?.[0];
    if (c) {
      seen.text += (route === "chat" ? c.delta?.content : c.text) ?? "";
      seen.finish = c.finish_reason ?? seen.finish;
      for (const t of c.delta?.tool_calls ?? []) {
        if (t.function?.name) seen.calls.push(t.function.name);
      }
    }
    seen.usage = normal(e.usage, route) ?? seen.usage;
  }
  return seen;
}

/** The request body of `route` (a stream asks for its usage chunk where one must be asked for). */
export function bodyOf(route: Route, stream: boolean, fields: Json): Json {
  const prompt = route === "chat"
    ? { messages: [{ role: "user", content: "Tell me a fortune" }] }
    : route === "completions"
    ? { prompt: "Tell me a fortune", max_tokens: 100 } // past the default of 16
    : { input: "Tell me a fortune" };
  const usage = stream && route !== "responses" ? { stream_options: { include_usage: true } } : {};
  return { model: "fortune", ...prompt, ...fields, stream, ...usage };
}

/** POST `body` to `route` through `s.fetch` and read the reply to its end. */
export async function call(s: UsageServer, route: Route, body: Json): Promise<Seen> {
  const res = await s.fetch(`${s.base}${PATHS[route]}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 400 || !body.stream) {
    return wholeSeen(route, res.status, res.status >= 400 ? {} : JSON.parse(text));
  }
  return streamSeen(route, res.status, sseData(text));
}

/** What a request must come to: tokens generated, finish, and how it is counted. */
export interface Want {
  tokens: number;
  finish?: string;
  status: keyof Pick<Counts, "success" | "cancelled" | "error">;
  /** Whether usage reaches the client (whole replies; streams that asked for it). */
  usage: boolean;
}

/** Usage and the metric deltas of one request, against `want` and the engine's own record. */
export function checkCounted(
  s: UsageServer,
  label: string,
  seen: Seen | undefined,
  want: Want,
  before: Counts,
  after: Counts,
): void {
  const prompt = s.engine.requests.at(-1)!.token_ids.length;
  equal(s.engine.delivered.at(-1)!.length, want.tokens, `${label}: tokens the engine handed out`);
  if (seen) {
    if (want.finish !== undefined) equal(seen.finish, want.finish, `${label}: finish`);
    equal(seen.usage !== undefined, want.usage, `${label}: usage present`);
    if (seen.usage) {
      equal(seen.usage.completion, want.tokens, `${label}: usage completion tokens`);
      equal(seen.usage.prompt, prompt, `${label}: usage prompt tokens`);
      equal(seen.usage.total, prompt + want.tokens, `${label}: usage total tokens`);
    }
  }
  equal(after.outputSum - before.outputSum, want.tokens, `${label}: output tokens metric`);
  equal(after.outputCount - before.outputCount, 1, `${label}: one output observation`);
  equal(after.inputSum - before.inputSum, prompt, `${label}: input tokens metric`);
  equal(after[want.status] - before[want.status], 1, `${label}: counted ${want.status}`);
}
