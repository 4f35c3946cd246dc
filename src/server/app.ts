/**
 * The OpenAI-compatible HTTP surface over any `LLMEngine`, on Web-standard `Request`/`Response`
 * only (the Deno adapter binds it to a port): completions and chat completions (streaming as
 * server-sent events, or whole), `/v1/models`, `/metrics` for a Prometheus scrape and `/health`.
 */
import type { LLMEngine } from "../contract/engine.ts";
import type { EngineConfig } from "../contract/types.ts";
import type { EngineMetrics } from "../metrics/engine_metrics.ts";
import type { RequestMetrics } from "../metrics/request_metrics.ts";
import type { ModelText } from "../text/load.ts";
import { HttpError } from "./errors.ts";
import { type Choice, chunkBody, responseBody, usage, usageChunk } from "./format.ts";
import { runChoice } from "./generation.ts";
import { type Job, parseJob } from "./requests.ts";

export interface ServerOptions {
  engine: LLMEngine;
  metrics: EngineMetrics;
  requests: RequestMetrics;
  /** Required as a bearer token on every route but `/health` when set. */
  apiKey?: string;
  /** Request bodies over this get 413 (default 1 MiB). */
  maxBodyBytes?: number;
  /** Requests in progress beyond this get 429 (default 64). */
  maxQueued?: number;
  /** Largest `n` (default 8). */
  maxN?: number;
}

let counter = 0;
const newId = (prefix: string) => `${prefix}-${Date.now().toString(36)}${(counter++).toString(36)}`;

export class KilnServer {
  #config: EngineConfig | undefined;
  #text: ModelText | undefined;
  #active = 0;
  #metrics: EngineMetrics;

  constructor(readonly options: ServerOptions) {
    this.#metrics = options.metrics;
  }

  /**
   * Serve: the engine has started and the text side is loaded (`metrics`: the engine's metrics
   * again, once they carry the model's labels).
   */
  ready(config: EngineConfig, text: ModelText, metrics?: EngineMetrics): void {
    this.#config = config;
    this.#text = text;
    if (metrics) this.#metrics = metrics;
  }

  get modelName(): string | undefined {
    return this.#config?.served_model_name ?? this.#config?.model;
  }

  /** The request handler (`Deno.serve(server.fetch)`, or any Web-standard server). */
  fetch = async (req: Request): Promise<Response> => {
    try {
      return await this.#route(req);
    } catch (e) {
      return HttpError.from(e).response();
    }
  };

  async #route(req: Request): Promise<Response> {
    const { pathname } = new URL(req.url);
    if (pathname === "/health") {
      return this.#config
        ? Response.json({ status: "ready", model: this.modelName })
        : Response.json({ status: "loading" }, { status: 503 });
    }
    const key = this.options.apiKey;
    if (key !== undefined && req.headers.get("authorization") !== `Bearer ${key}`) {
      throw new HttpError(
        401,
        "missing or wrong API key",
        "invalid_request_error",
        null,
        "invalid_api_key",
      );
    }
    if (pathname === "/metrics" && req.method === "GET") {
      const { contentType, body } = this.#metrics.render(req.headers.get("accept"), [
        this.options.requests.registry,
      ]);
      return new Response(body, { headers: { "content-type": contentType } });
    }
    const config = this.#config, text = this.#text;
    if (pathname === "/v1/models" && req.method === "GET") {
      const data = config
        ? [{ id: this.modelName, object: "model", created: 0, owned_by: "kiln" }]
        : [];
      return Response.json({ object: "list", data });
    }
    const chat = pathname === "/v1/chat/completions";
    if (!chat && pathname !== "/v1/completions") {
      throw new HttpError(
        404,
        `no route ${req.method} ${pathname}`,
        "invalid_request_error",
        null,
        "not_found",
      );
    }
    if (req.method !== "POST") throw new HttpError(405, `${pathname} takes POST`);
    if (!config || !text) {
      throw new HttpError(503, "the model is still loading", "service_unavailable");
    }
    const body = await this.#readJson(req);
    const model = (body as { model?: unknown } | null)?.model;
    if (typeof model === "string" && model !== this.modelName && model !== config.model) {
      throw new HttpError(
        404,
        `model ${JSON.stringify(model)} is not served here (${this.modelName})`,
        "invalid_request_error",
        "model",
        "model_not_found",
      );
    }
    const job = parseJob(body, chat, text, {
      maxN: this.options.maxN ?? 8,
      contextLength: config.context_length ?? Infinity,
      maxLogprobs: 20,
    });
    if (this.#active >= (this.options.maxQueued ?? 64)) {
      throw new HttpError(429, "too many requests in progress; retry later", "rate_limit_error");
    }
    return job.stream
      ? this.#stream(job, text, req.signal)
      : await this.#whole(job, text, req.signal);
  }

  async #readJson(req: Request): Promise<unknown> {
    const limit = this.options.maxBodyBytes ?? 1 << 20;
    const tooLarge = () => new HttpError(413, `request body over ${limit} bytes`);
    if (Number(req.headers.get("content-length") ?? 0) > limit) throw tooLarge();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const c of req.body ?? new ReadableStream<Uint8Array>()) {
      size += c.byteLength;
      if (size > limit) throw tooLarge();
      chunks.push(c);
    }
    const text = await new Blob(chunks as BlobPart[]).text();
    try {
      return JSON.parse(text);
    } catch (e) {
      throw HttpError.badRequest(`malformed JSON: ${(e as Error).message}`);
    }
  }

  /** Run every choice; `onPiece` sees each piece as it comes. Returns completion tokens. */
  async #run(
    job: Job,
    text: ModelText,
    signal: AbortSignal,
    onPiece: (c: Choice, tokens: number) => void,
  ): Promise<number> {
    this.#active++;
    const tracker = this.options.requests.startRequest(job.model, job.prompt.length);
    let tokens = 0;
    try {
      await Promise.all(Array.from({ length: job.n }, async (_, i) => {
        for await (const p of runChoice(this.options.engine, text, job, i, signal)) {
          tokens += p.tokens;
          if (p.tokens > 0) tracker.tokens(p.tokens);
          onPiece(
            { index: i, text: p.text, logprobs: p.logprobs, finish: p.finish ?? null },
            p.tokens,
          );
        }
      }));
      tracker.finish(signal.aborted ? "cancelled" : "success");
      return tokens;
    } catch (e) {
      tracker.finish(signal.aborted ? "cancelled" : "error", HttpError.from(e).type);
      throw e;
    } finally {
      this.#active--;
    }
  }

  async #whole(job: Job, text: ModelText, signal: AbortSignal): Promise<Response> {
    const choices: Choice[] = Array.from({ length: job.n }, (_, index) => ({
      index,
      text: "",
      logprobs: [],
      finish: null,
    }));
    const tokens = await this.#run(job, text, signal, (p) => {
      const c = choices[p.index]!;
      c.text += p.text;
      c.logprobs.push(...p.logprobs);
      if (p.finish) c.finish = p.finish;
    });
    const id = newId(job.chat ? "chatcmpl" : "cmpl");
    const created = Math.floor(Date.now() / 1000);
    return Response.json(responseBody(job, id, created, choices, usage(job.prompt.length, tokens)));
  }

  #stream(job: Job, text: ModelText, clientSignal: AbortSignal): Response {
    const abort = new AbortController();
    const signal = AbortSignal.any([clientSignal, abort.signal]);
    const id = newId(job.chat ? "chatcmpl" : "cmpl");
    const created = Math.floor(Date.now() / 1000);
    const enc = new TextEncoder();
    const offsets = new Array<number>(job.n).fill(0);
    const started = new Array<boolean>(job.n).fill(false);
    const stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        const send = (data: unknown) => {
          if (signal.aborted) return;
          controller.enqueue(
            enc.encode(`data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`),
          );
        };
        this.#run(job, text, signal, (c) => {
          send(chunkBody(job, id, created, c, !started[c.index], offsets[c.index]!));
          started[c.index] = true;
          offsets[c.index]! += c.text.length;
        }).then((tokens) => {
          if (job.includeUsage) {
            send(usageChunk(job, id, created, usage(job.prompt.length, tokens)));
          }
          send("[DONE]");
        }, (e) => send(HttpError.from(e).body())).finally(() => {
          try {
            controller.close();
          } catch {
            // already closed by a cancel
          }
        });
      },
      cancel: () => abort.abort(),
    });
    return new Response(stream, {
      headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
    });
  }
}
