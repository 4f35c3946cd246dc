/**
 * The OpenAI-compatible HTTP surface over any `LLMEngine`, on Web-standard `Request`/`Response`
 * only (the Deno adapter binds it to a port): completions and chat completions (streaming as
 * server-sent events, or whole), the Responses API (`/v1/responses`: `responses_route.ts`),
 * `/v1/models` and `/v1/models/{id}` (`model_routes.ts`), vLLM's `/tokenize` and `/detokenize`
 * (`token_routes.ts`), `/metrics` for a Prometheus scrape and `/health`; and the token-level
 * engine endpoint (`/v1/engine/generate`, `/v1/engine/config`: `engine_routes.ts`) that a
 * Dynamo worker shim drives.
 */
import type { LLMEngine } from "../contract/engine.ts";
export type { ServerOptions } from "./options.ts";
import type { EngineConfig } from "../contract/types.ts";
import { kvGeometry, kvMisfit } from "../contract/kv_capacity.ts";
import type { EngineMetrics } from "../metrics/engine_metrics.ts";
import type { ModelText } from "../text/load.ts";
import { HttpError } from "./errors.ts";
import { checkHost, checkJson, keyMatches, readJson, unauthorized } from "./guard.ts";
import { Access } from "./access.ts";
import type { ServerOptions } from "./options.ts";
import { addPart, type Choice, choiceOf, jobUsage, responseBody } from "../openai/format.ts";
import { type Job, parseJob } from "../openai/requests.ts";
import { countRefused, TrackedRequest } from "../openai/tracking.ts";
import { eventStream, type RunChoices } from "./streaming.ts";
import { modelId, modelList, modelNotFound, modelResponse, serves } from "./model_routes.ts";
import { TOKEN_ROUTES, tokenResponse } from "./token_routes.ts";
import { RESPONSES, ResponsesRoute } from "./responses_route.ts";
import {
  configResponse,
  ENGINE_CONFIG,
  ENGINE_GENERATE,
  engineError,
  generateResponse,
} from "./engine_routes.ts";

/** The finish reason of a choice cut short by shutdown (vLLM's for an aborted request). */
export const ABORT_FINISH = "abort";

const COMPLETIONS: Record<string, boolean> = {
  "/v1/completions": false,
  "/v1/chat/completions": true,
  [RESPONSES]: true, // the Responses API, run on the chat path (`responses_route.ts`)
};
const GET_ROUTES = new Set(["/health", "/metrics", "/v1/models"]);

/** An id no client can guess or repeat: every request's own, never one a client chose. */
const newId = (prefix: string) => `${prefix}-${crypto.randomUUID().replaceAll("-", "")}`;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Whether a completion request has been counted in `dynamo_frontend_requests_total` yet. */
interface Counted {
  counted: boolean;
}

export class KilnServer {
  #config: EngineConfig | undefined;
  #text: ModelText | undefined;
  #active = 0;
  #running = new Set<Promise<unknown>>();
  #draining = false;
  #unavailable: string | undefined;
  /** Aborts every request in flight (the drain deadline passed). */
  #shutdown = new AbortController();
  #metrics: EngineMetrics;
  #access: Access;
  #responses: ResponsesRoute;

  /** Throws `TypeError` for access options that are not valid (see `Access`). */
  constructor(readonly options: ServerOptions) {
    this.#metrics = options.metrics;
    this.#access = new Access(options);
    this.#responses = new ResponsesRoute(options);
  }

  /**
   * Serve: the engine has started and the text side is loaded (`metrics`: the engine's metrics
   * again, once they carry the model's labels). Also what brings a server back after
   * `unavailable` (`engine`: a new one).
   */
  ready(config: EngineConfig, text: ModelText, metrics?: EngineMetrics, engine?: LLMEngine): void {
    this.#config = config;
    this.#text = text;
    if (metrics) this.#metrics = metrics;
    if (engine) this.options.engine = engine;
    this.#unavailable = undefined;
  }

  /** Stop admitting completions and answer `/health` 503 until `ready` again (`why`: shown). */
  unavailable(why: string): void {
    this.#unavailable = why;
  }

  get modelName(): string | undefined {
    return this.#config?.served_model_name ?? this.#config?.model;
  }

  /** Requests running now. */
  get inFlight(): number {
    return this.#active;
  }

  /**
   * Drain: `/health` turns 503 (so a load balancer stops routing here) and new completions get
   * 503; those in flight run to the end, or until `graceMs` passes, when each is cut and ends
   * with finish reason `abort`. Resolves once none is left (at most `cutMs` after the cut) with
   * how many were cut.
   */
  async drain(graceMs: number, cutMs = 5000): Promise<{ cut: number }> {
    this.#draining = true;
    const idle = () => Promise.allSettled([...this.#running]);
    if (this.#running.size > 0) await Promise.race([idle(), sleep(graceMs)]);
    const cut = this.#running.size;
    if (cut > 0) {
      this.#shutdown.abort();
      await Promise.race([idle(), sleep(cutMs)]);
    }
    return { cut };
  }

  /** Cut every request in flight now (a second signal while draining). */
  abortAll(): void {
    this.#draining = true;
    this.#shutdown.abort();
  }

  /** The request handler (`Deno.serve(server.fetch)`, or any Web-standard server). */
  fetch = async (req: Request): Promise<Response> => {
    let res: Response;
    try {
      res = await this.#route(req);
    } catch (e) {
      res = HttpError.from(e).response();
    }
    return this.#access.decorate(req, res);
  };

  async #route(req: Request): Promise<Response> {
    checkHost(req);
    this.#access.check(req);
    const preflight = this.#access.preflight(req);
    if (preflight) return preflight;
    const { pathname } = new URL(req.url);
    const get = req.method === "GET" || req.method === "HEAD";
    if (pathname === "/health") {
      if (!get) throw HttpError.notAllowed(pathname, "GET, HEAD");
      return this.#health();
    }
    const key = this.options.apiKey;
    const authorization = req.headers.get("authorization");
    const chat = COMPLETIONS[pathname];
    if (chat !== undefined) {
      const state: Counted = { counted: false };
      try {
        if (key !== undefined && !(await keyMatches(authorization, key))) {
          throw unauthorized(authorization !== null);
        }
        return await this.#completion(req, chat, pathname, state);
      } catch (e) {
        const { requests } = this.options;
        if (!state.counted) countRefused(requests, this.modelName ?? "", HttpError.from(e).type);
        throw e;
      }
    }
    if (pathname === ENGINE_GENERATE) {
      // Counted as the completions are: refusals (auth, a bad body, 429) included.
      const state: Counted = { counted: false };
      try {
        if (key !== undefined && !(await keyMatches(authorization, key))) {
          throw unauthorized(authorization !== null);
        }
        return await this.#engineGenerate(req, state);
      } catch (e) {
        const error = engineError(e);
        if (!state.counted) countRefused(this.options.requests, this.modelName ?? "", error.type);
        throw error;
      }
    }
    if (key !== undefined && !(await keyMatches(authorization, key))) {
      throw unauthorized(authorization !== null);
    }
    if (pathname === ENGINE_CONFIG) {
      if (!get) throw engineError(HttpError.notAllowed(pathname, "GET, HEAD"));
      try {
        this.#checkServing();
      } catch (e) {
        throw engineError(e);
      }
      return configResponse(this.#config!);
    }
    if (TOKEN_ROUTES.has(pathname)) {
      return tokenResponse(pathname, await this.#body(req, pathname), this.#config!, this.#text!);
    }
    const kept = this.#responses.retrieve(pathname, get);
    if (kept) return kept;
    const id = modelId(pathname);
    if (id !== undefined) {
      if (!get) throw HttpError.notAllowed(pathname, "GET, HEAD");
      return modelResponse(id, this.#config);
    }
    if (!GET_ROUTES.has(pathname)) {
      throw new HttpError(404, `no route ${pathname}`, "invalid_request_error", null, "not_found");
    }
    if (!get) throw HttpError.notAllowed(pathname, "GET, HEAD");
    if (pathname === "/metrics") {
      const { contentType, body } = this.#metrics.render(req.headers.get("accept"), [
        this.options.requests.registry,
      ]);
      return new Response(body, { headers: { "content-type": contentType } });
    }
    return modelList(this.#config);
  }

  /**
   * `POST /v1/engine/generate` (`engine_routes.ts`), under the same limits as completions, and
   * counted in `dynamo_frontend_*` from the moment its body parses (`state.counted`).
   */
  async #engineGenerate(req: Request, state: Counted): Promise<Response> {
    const body = await this.#body(req, ENGINE_GENERATE);
    this.#checkRoom();
    // The client's `x-request-id` is a label (echoed back), never the request's key: the engine
    // tells requests apart by their context, and the server names each one itself.
    const id = newId("engine");
    const label = req.headers.get("x-request-id") ?? id;
    this.#active++;
    let run: Promise<void> = Promise.resolve();
    try {
      const signal = AbortSignal.any([req.signal, this.#shutdown.signal]);
      const track = (promptTokens: number) => {
        state.counted = true;
        return this.options.requests.startRequest(this.modelName ?? "", promptTokens);
      };
      const { response, done } = await generateResponse(
        this.options.engine,
        body,
        label,
        signal,
        track,
      );
      run = done;
      return response;
    } finally {
      const tracked = run.finally(() => {
        this.#active--;
        this.#running.delete(tracked);
      });
      this.#running.add(tracked);
    }
  }

  #health(): Response {
    const down = (status: string, extra: Record<string, string> = {}) =>
      Response.json({ status, ...extra }, { status: 503, headers: { "retry-after": "5" } });
    if (this.#draining) return down("draining");
    if (!this.#config) return down("loading");
    if (this.#unavailable !== undefined) return down("unavailable", { reason: this.#unavailable });
    return Response.json({ status: "ready", model: this.modelName });
  }

  /** 503 when not serving (loading, draining, the engine gone). */
  #checkServing(): void {
    const why = this.#draining
      ? "the server is shutting down"
      : !this.#config
      ? "the model is still loading"
      : this.#unavailable;
    if (why !== undefined) {
      throw new HttpError(503, why, "service_unavailable").with({ "retry-after": "5" });
    }
  }

  /** A POST's JSON body, read within the limits, while the server is serving. */
  async #body(req: Request, path: string): Promise<unknown> {
    if (req.method !== "POST") throw HttpError.notAllowed(path, "POST");
    checkJson(req);
    this.#checkServing();
    const body = await readJson(req, {
      maxBytes: this.options.maxBodyBytes ?? 1 << 20,
      timeoutMs: this.options.bodyTimeoutMs ?? 10_000,
    });
    this.#checkServing();
    return body;
  }

  /** 429 when `maxQueued` requests are in progress. */
  #checkRoom(): void {
    if (this.#active >= (this.options.maxQueued ?? 64)) {
      throw new HttpError(429, "too many requests in progress; retry later", "rate_limit_error")
        .with({ "retry-after": "1" });
    }
  }

  async #completion(req: Request, chat: boolean, path: string, state: Counted): Promise<Response> {
    const body = await this.#body(req, path);
    const config = this.#config!, text = this.#text!;
    const model = (body as { model?: unknown } | null)?.model;
    if (typeof model === "string" && !serves(config, model)) throw modelNotFound(model, config);
    const limits = {
      maxN: this.options.maxN ?? 8,
      contextLength: config.context_length ?? Infinity,
      maxLogprobs: 20,
    };
    const responses = path === RESPONSES ? this.#responses.parse(body, text, limits) : undefined;
    const job = responses?.job ?? parseJob(body, chat, text, limits);
    // A prompt the engine's whole KV cache could never hold is refused here, before a stream's
    // 200: retrying cannot help, so it is a 400, not a 429.
    const kv = kvGeometry(config);
    const misfit = kv && kvMisfit(job.request(job.longest), kv);
    if (misfit) {
      const prompt = responses ? "input" : chat ? "messages" : "prompt";
      const param = misfit.field === "min_tokens" ? "min_tokens" : prompt;
      throw HttpError.badRequest(misfit.message, param);
    }
    this.#checkRoom();
    state.counted = true; // from here on the request's tracker counts it
    if (responses) {
      const run: RunChoices = (signal, onPiece) => this.#run(job, text, signal, onPiece);
      return await this.#responses.answer(responses, run, req.signal);
    }
    return job.stream
      ? await this.#stream(job, text, req.signal)
      : await this.#whole(job, text, req.signal);
  }

  /**
   * Run every choice; `onPiece` sees each piece as it comes. Returns completion tokens. `signal`
   * is the client's; shutdown cuts the choices too, and each then ends with `abort`.
   */
  #run(
    job: Job,
    text: ModelText,
    clientSignal: AbortSignal,
    onPiece: (c: Choice, tokens: number) => void,
  ): Promise<number> {
    const shutdown = this.#shutdown.signal;
    const signal = AbortSignal.any([clientSignal, shutdown]);
    this.#active++;
    const tracked = new TrackedRequest(this.options.requests, job);
    let tokens = 0;
    const choice = async (i: number) => {
      let finished = false;
      for await (const p of tracked.choice(this.options.engine, text, i, signal)) {
        tokens += p.tokens;
        let finish: string | null = p.finish ?? null;
        if (finish === "cancelled" && shutdown.aborted) finish = ABORT_FINISH;
        finished ||= finish !== null;
        onPiece(choiceOf(i, p, finish), p.tokens);
      }
      if (!finished && shutdown.aborted) {
        onPiece({ index: i, text: "", logprobs: [], finish: ABORT_FINISH }, 0);
      }
    };
    const run = (async () => {
      try {
        await Promise.all(Array.from({ length: job.choices }, (_, i) => choice(i)));
        tracked.succeeded(signal);
        return tokens;
      } catch (e) {
        tracked.failed(signal, e);
        throw e;
      } finally {
        this.#active--;
      }
    })();
    this.#running.add(run);
    run.catch(() => {}).finally(() => this.#running.delete(run));
    return run;
  }

  async #whole(job: Job, text: ModelText, signal: AbortSignal): Promise<Response> {
    const choices: Choice[] = Array.from({ length: job.choices }, (_, index) => ({
      index,
      text: "",
      logprobs: [],
      finish: null,
    }));
    const tokens = await this.#run(job, text, signal, (p) => addPart(choices[p.index]!, p));
    const id = newId(job.chat ? "chatcmpl" : "cmpl");
    const created = Math.floor(Date.now() / 1000);
    const reasoning = choices.reduce((sum, c) => sum + (c.reasoningTokens ?? 0), 0);
    const u = jobUsage(job, tokens, reasoning);
    return Response.json(responseBody(job, id, created, choices, u));
  }

  /** The completion as server-sent events (`streaming.ts`). */
  #stream(job: Job, text: ModelText, clientSignal: AbortSignal): Promise<Response> {
    const id = newId(job.chat ? "chatcmpl" : "cmpl");
    return eventStream(
      job,
      id,
      (signal, onPiece) => this.#run(job, text, signal, onPiece),
      clientSignal,
    );
  }
}
