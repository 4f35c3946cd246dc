/**
 * The OpenAI-compatible HTTP surface over any `LLMEngine`, on Web-standard `Request`/`Response`
 * only (the Deno adapter binds it to a port): routes, auth, limits and error mapping. Completions,
 * chat completions and the Responses API (`completion_route.ts`, `responses_route.ts`: run by the
 * serving layer, `src/openai/serving.ts`, as server-sent events or whole), `/v1/models` and
 * `/v1/models/{id}` (`model_routes.ts`), vLLM's `/tokenize` and `/detokenize`
 * (`token_routes.ts`), `/metrics` for a Prometheus scrape and `/health` (`server_state.ts`); and
 * the token-level engine endpoint (`/v1/engine/generate`, `/v1/engine/config`:
 * `engine_routes.ts`) that a Dynamo worker shim drives. */
import type { LLMEngine } from "../contract/engine.ts";
export type { ServerOptions } from "./options.ts";
import type { EngineConfig } from "../contract/types.ts";
import type { EngineMetrics } from "../contract/metrics/engine_metrics.ts";
import type { ModelText } from "../text/load.ts";
import { HttpError } from "./errors.ts";
import { checkHost, checkJson, keyMatches, readJson, unauthorized } from "./guard.ts";
import { Access } from "./access.ts";
import { ServerState } from "./server_state.ts";
import type { ServerOptions } from "./options.ts";
import { newId } from "../openai/serving.ts";
import { countRefused } from "../openai/tracking.ts";
import { completionResponse, COMPLETIONS } from "./completion_route.ts";
import { modelId, modelList, modelResponse } from "./model_routes.ts";
import { TOKEN_ROUTES, tokenResponse } from "./token_routes.ts";
import { ResponsesRoute } from "./responses_route.ts";
import {
  configResponse,
  ENGINE_CONFIG,
  ENGINE_GENERATE,
  engineError,
  generateResponse,
} from "./engine_routes.ts";
export { ABORT_FINISH } from "../openai/serving.ts";

const GET_ROUTES = new Set(["/health", "/metrics", "/v1/models"]);

/** Whether a completion request has been counted in `dynamo_frontend_requests_total` yet. */
interface Counted {
  counted: boolean;
}

export class KilnServer {
  readonly #state = new ServerState();
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
    if (metrics) this.#metrics = metrics;
    if (engine) this.options.engine = engine;
    this.#state.ready(config, text);
  }

  /** Stop admitting completions and answer `/health` 503 until `ready` again (`why`: shown). */
  unavailable(why: string): void {
    this.#state.unavailable(why);
  }

  get modelName(): string | undefined {
    return this.#state.modelName;
  }

  /** Requests running now. */
  get inFlight(): number {
    return this.#state.inFlight.size;
  }

  /**
   * Drain: `/health` turns 503 (so a load balancer stops routing here) and new completions get
   * 503; those in flight run to the end, or until `graceMs` passes, when each is cut and ends
   * with finish reason `abort`. Resolves once none is left (at most `cutMs` after the cut) with
   * how many were cut.
   */
  drain(graceMs: number, cutMs = 5000): Promise<{ cut: number }> {
    return this.#state.drain(graceMs, cutMs);
  }

  /** Cut every request in flight now (a second signal while draining). */
  abortAll(): void {
    this.#state.abortAll();
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
      return this.#state.health();
    }
    if (COMPLETIONS[pathname] !== undefined) {
      return await this.#counted(req, async (state) => {
        const body = await this.#body(req, pathname);
        const server = { options: this.options, state: this.#state, responses: this.#responses };
        return await completionResponse(req, pathname, body, server, () => {
          this.#checkRoom();
          state.counted = true; // from here on the request's tracker counts it
        });
      });
    }
    if (pathname === ENGINE_GENERATE) {
      // Counted as the completions are: refusals (auth, a bad body, 429) included.
      return await this.#counted(req, (state) => this.#engineGenerate(req, state), engineError);
    }
    await this.#authorize(req);
    if (pathname === ENGINE_CONFIG) {
      if (!get) throw engineError(HttpError.notAllowed(pathname, "GET, HEAD"));
      try {
        this.#state.checkServing();
      } catch (e) {
        throw engineError(e);
      }
      return configResponse(this.#state.config!);
    }
    if (TOKEN_ROUTES.has(pathname)) {
      const body = await this.#body(req, pathname);
      return tokenResponse(pathname, body, this.#state.config!, this.#state.text!);
    }
    const kept = this.#responses.retrieve(pathname, get);
    if (kept) return kept;
    const id = modelId(pathname);
    if (id !== undefined) {
      if (!get) throw HttpError.notAllowed(pathname, "GET, HEAD");
      return modelResponse(id, this.#state.config);
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
    return modelList(this.#state.config);
  }

  /** 401 unless the request carries the API key (when one is set). */
  async #authorize(req: Request): Promise<void> {
    const key = this.options.apiKey, authorization = req.headers.get("authorization");
    if (key !== undefined && !(await keyMatches(authorization, key))) {
      throw unauthorized(authorization !== null);
    }
  }

  /**
   * An authorized request run by `answer`; a refusal (as `mapError` gives it) before `answer`
   * counts the request (`state.counted`) is counted in `dynamo_frontend_requests_total` here.
   */
  async #counted(
    req: Request,
    answer: (state: Counted) => Promise<Response>,
    mapError: (e: unknown) => unknown = (e) => e,
  ): Promise<Response> {
    const state: Counted = { counted: false };
    try {
      await this.#authorize(req);
      return await answer(state);
    } catch (e) {
      const error = mapError(e);
      if (!state.counted) {
        countRefused(this.options.requests, this.modelName ?? "", HttpError.from(error).type);
      }
      throw error;
    }
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
    const end = this.#state.inFlight.begin();
    let run: Promise<void> = Promise.resolve();
    try {
      const signal = AbortSignal.any([req.signal, this.#state.shutdown]);
      const track = (promptTokens: number) => {
        state.counted = true;
        return this.options.requests.startRequest(this.modelName ?? "", promptTokens);
      };
      const { engine } = this.options;
      const { response, done } = await generateResponse(engine, body, label, signal, track);
      run = done;
      return response;
    } finally {
      run.finally(end);
    }
  }

  /** A POST's JSON body, read within the limits, while the server is serving. */
  async #body(req: Request, path: string): Promise<unknown> {
    if (req.method !== "POST") throw HttpError.notAllowed(path, "POST");
    checkJson(req);
    this.#state.checkServing();
    const body = await readJson(req, {
      maxBytes: this.options.maxBodyBytes ?? 1 << 20,
      timeoutMs: this.options.bodyTimeoutMs ?? 10_000,
    });
    this.#state.checkServing();
    return body;
  }

  /** 429 when `maxQueued` requests are in progress. */
  #checkRoom(): void {
    if (this.#state.inFlight.size >= (this.options.maxQueued ?? 64)) {
      throw new HttpError(429, "too many requests in progress; retry later", "rate_limit_error")
        .with({ "retry-after": "1" });
    }
  }
}
