/** The `LLMEngine` interface every Kiln engine implements, mirroring Dynamo's backend trait. */
import type { EngineMetrics } from "./metrics/engine_metrics.ts";
import type { KvEventSource } from "./kv_events.ts";
import type { EngineConfig, LLMEngineOutput, PreprocessedRequest } from "./types.ts";

/** Per-request context: identity, cancellation and the first-token hook. */
export interface GenerateContext {
  /**
   * Names the request in logs and metrics: a label, which callers may repeat, never a key.
   * Engines tell requests apart by their context object (`abort(ctx)`), so a request id another
   * caller chose cannot reach this request.
   */
  readonly requestId: string;
  /** Aborts when the request is cancelled; the engine then ends the stream with `cancelled`. */
  readonly signal: AbortSignal;
  /** Engines call this once, when the first token is known (time-to-first-token). */
  notifyFirstToken(): void;
}

/** What setupMetrics() receives: the model identity and a metrics handle to register on. */
export interface MetricsContext {
  /** The served model name, used as the metrics' model label. */
  model: string;
  /** The Dynamo component name (the metrics' component label). */
  component: string;
  /** Seconds the model took to load. */
  model_load_time_seconds: number;
  /** Where the engine registers its gauges. */
  metrics: EngineMetrics;
}

/** What setupMetrics() returns: the data-parallel ranks the engine reports gauges for. */
export interface MetricsBindings {
  /** The data-parallel ranks the engine reports gauges for (`[0]` for a single-rank engine). */
  dp_ranks: number[];
}

/**
 * Where the runtime serves an engine (Dynamo's `Endpoint`, named by its path
 * `namespace.component.endpoint`), handed to {@linkcode LLMEngine.onEndpointReady}.
 */
export interface ServingEndpoint {
  /** The Dynamo namespace (`dynamo`). */
  namespace: string;
  /** The component (`backend`, `kiln`). */
  component: string;
  /** The endpoint (`generate`). */
  endpoint: string;
}

/**
 * A token-in, token-out inference engine.
 *
 * Stream rules for {@linkcode LLMEngine.generate}: every stream yields exactly one terminal
 * chunk (one with `finish_reason`) and it is the last; a cancelled request ends with a
 * terminal `cancelled` chunk; a typed failure ({@linkcode EngineError}) thrown by the iterator
 * is itself terminal. Errors found before any chunk (bad input, engine not started) are thrown
 * by the first `next()`.
 */
export interface LLMEngine {
  /** Load the model and get ready to serve. A second call fails with `EngineShutdown`. */
  start(workerId: bigint): Promise<EngineConfig>;
  /** Stream the completion of one request. Called concurrently. */
  generate(request: PreprocessedRequest, ctx: GenerateContext): AsyncIterable<LLMEngineOutput>;
  /** Cancel the request that owns `ctx` (as if its signal had fired). */
  abort?(ctx: GenerateContext): Promise<void>;
  /** Stop admitting work and wait for in-flight requests (Dynamo 1.3; 1.5 asks `isQuiescent`). */
  drain?(): Promise<void>;
  /** Release everything. Idempotent, and safe on a never-started engine. */
  cleanup(): Promise<void>;
  /** KV event sources, one per data-parallel rank; stable for the engine's lifetime. */
  kvEventSources?(): Promise<KvEventSource[]>;
  /** Register engine gauges; the returned ranks are stable for the engine's lifetime. */
  setupMetrics?(ctx: MetricsContext): Promise<MetricsBindings>;

  // Dynamo 1.5's members (its names in snake_case). Every one is optional; the default an
  // absent one stands for is Dynamo's.

  /**
   * `is_quiescent`: whether `cleanup()` may release memory now, i.e. no request is live.
   * `true`: quiescent; `false`: a request still holds memory; `null`: the engine cannot tell
   * (the default). Once `drain()` has resolved it is not `false`.
   */
  isQuiescent?(): Promise<boolean | null>;
  /**
   * `health_check_payload`: a small request the runtime may send through `generate()` to probe
   * an idle engine, marked `is_probe`; `null` (the default) turns active probing off.
   */
  healthCheckPayload?(): Promise<PreprocessedRequest | null>;
  /** `supported_controls`: the engine-control names `engineControl` accepts (default none). */
  supportedControls?(): Promise<string[]>;
  /**
   * `engine_control`: run one control named by `supportedControls` with its JSON `body`; the
   * result is a JSON object (`status` and what the control reports). A name not advertised is
   * refused with `InvalidArgument` naming it (Dynamo's default answers every name with an
   * error).
   */
  engineControl?(control: string, body: Record<string, unknown>): Promise<Record<string, unknown>>;
  /**
   * `on_endpoint_ready`: called once after `start()`, before serving begins, with where the
   * runtime serves the engine (default: nothing happens). A rejection stops the worker.
   */
  onEndpointReady?(endpoint: ServingEndpoint): Promise<void>;
}

/** A {@linkcode GenerateContext} that owns its AbortController; `stop()` cancels it. */
export class RequestContext implements GenerateContext {
  /** The request's id: given, or `req-<uuid>` (random, so never another request's). */
  readonly requestId: string;
  readonly #controller = new AbortController();
  /** Aborts on `stop()` or when the signal given to the constructor aborts. */
  readonly signal: AbortSignal;
  #firstTokenAt: number | undefined;
  readonly #onFirstToken: (() => void) | undefined;

  /**
   * A context with its own controller, also cancelled by `options.signal` if given.
   *
   * @param options `requestId` (default `req-<random uuid>`), an outside `signal` that also cancels, and
   * `onFirstToken`, called once by `notifyFirstToken()`.
   */
  constructor(
    options: { requestId?: string; signal?: AbortSignal; onFirstToken?: () => void } = {},
  ) {
    this.requestId = options.requestId ?? `req-${crypto.randomUUID()}`;
    this.signal = options.signal === undefined
      ? this.#controller.signal
      : AbortSignal.any([this.#controller.signal, options.signal]);
    this.#onFirstToken = options.onFirstToken;
  }

  /** Cancel the request. */
  stop(reason?: unknown): void {
    this.#controller.abort(reason);
  }

  notifyFirstToken(): void {
    if (this.#firstTokenAt !== undefined) return;
    this.#firstTokenAt = performance.now();
    this.#onFirstToken?.();
  }

  /** `performance.now()` when the first token was reported, if it was. */
  get firstTokenAt(): number | undefined {
    return this.#firstTokenAt;
  }
}
