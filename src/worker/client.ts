/**
 * `WorkerEngine`: the `LLMEngine` interface on the main thread, the engine in a Web Worker (or a
 * Deno Worker) behind comlink. Each request streams over its own MessagePort in batches; an
 * AbortSignal here cancels there; errors keep their EngineError type. If the worker dies, every
 * open stream ends with `Disconnected` and later calls fail with `EngineShutdown`. A worker dies
 * loudly (an uncaught error) or silently (terminated, closed, its thread gone: no event at all);
 * a heartbeat catches the second kind: once started, the worker is pinged every `intervalMs`,
 * and one that has not answered for `timeoutMs` is declared dead.
 */
import * as Comlink from "comlink";
import type {
  GenerateContext,
  LLMEngine,
  MetricsBindings,
  MetricsContext,
  ServingEndpoint,
} from "../contract/engine.ts";
import { EngineError } from "../contract/errors.ts";
import type { KvEventSource } from "../contract/kv_events.ts";
import { routerGauges } from "../metrics/router_gauges.ts";
import type { EngineConfig, LLMEngineOutput, PreprocessedRequest } from "../contract/types.ts";
import type { LoadProgress } from "../runtime/gpu_model.ts";
import { SpeculationMetrics } from "../engines/speculation_metrics.ts";
import { Lifecycle } from "../engines/lifecycle.ts";
import type { EngineHost } from "./host.ts";
import {
  type HostOptions,
  type HostStats,
  installErrorTransfer,
  type StreamMessage,
} from "./protocol.ts";

/**
 * Heartbeat timing. Defaults: a ping a second, dead after 30 s without an answer, well beyond the
 * longest a live worker's event loop was seen blocked (a pipeline compile on lavapipe, ~10 s). A
 * worker that dies loudly (an uncaught error) is noticed at once, whatever these are.
 */
export interface Liveness {
  /** Milliseconds between pings. */
  intervalMs: number;
  /** Milliseconds without an answer after which the worker is declared dead. */
  timeoutMs: number;
}

const DEFAULT_LIVENESS: Liveness = { intervalMs: 1000, timeoutMs: 30_000 };

/**
 * An {@linkcode LLMEngine} on the main thread whose engine (a `WebGpuEngine`) runs in a worker;
 * streams, cancellation, errors and metrics cross the boundary.
 */
export class WorkerEngine implements LLMEngine {
  #worker: Worker | undefined;
  #host: Comlink.Remote<EngineHost> | undefined;
  /** `running` from `start()` on (a request may be sent while the worker loads), or `dead`. */
  readonly #life = new Lifecycle();
  #streams = new Set<(e: EngineError) => void>();
  #onDeath: ((e: EngineError) => void)[] = [];
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  #deathListeners: ((e: EngineError) => void)[] = [];
  #aborting = new Set<Promise<void>>();
  /**
   * The key each live request has in the worker, by its context: made here (a random UUID), so
   * that no caller's `requestId`, which is only a label, can name another caller's request.
   */
  #keys = new Map<GenerateContext, string>();

  /**
   * An engine whose worker is created on `start()`.
   *
   * @param makeWorker Creates the worker running an `exposeHost` module (runtime-specific).
   * @param options The model to load and the engine's settings, sent to the worker.
   * @param onLoadProgress Hears the weight upload in the worker during `start()`.
   * @param liveness Heartbeat timing (default: a ping a second, dead after 30 s).
   */
  constructor(
    readonly makeWorker: () => Worker,
    readonly options: HostOptions,
    readonly onLoadProgress?: LoadProgress,
    readonly liveness: Liveness = DEFAULT_LIVENESS,
  ) {}

  /** Hear the worker's death (once; not called for `cleanup`). */
  onDeath(listener: (error: EngineError) => void): void {
    const dead = this.#life.deathError;
    if (dead) listener(dead);
    else this.#deathListeners.push(listener);
  }

  /** Ping the worker; declare it dead when no answer came for `timeoutMs`. */
  #startHeartbeat(host: Comlink.Remote<EngineHost>): void {
    let answered = performance.now();
    let waiting = false;
    this.#heartbeat = setInterval(() => {
      if (performance.now() - answered > this.liveness.timeoutMs) {
        this.#die(
          new EngineError(
            "Disconnected",
            `engine worker stopped answering (no reply in ${this.liveness.timeoutMs} ms)`,
          ),
        );
        return;
      }
      if (waiting) return;
      waiting = true;
      host.ping().then(() => {
        answered = performance.now();
        waiting = false;
      }, () => {});
    }, this.liveness.intervalMs);
  }

  #stopHeartbeat(): void {
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }

  #remote(): Comlink.Remote<EngineHost> {
    if (this.#life.deathError) throw this.#life.deathError;
    if (!this.#host) {
      installErrorTransfer();
      const worker = this.#worker = this.makeWorker();
      worker.addEventListener("error", (e) => {
        e.preventDefault?.();
        this.#die(
          new EngineError(
            "Disconnected",
            `engine worker died: ${(e as ErrorEvent).message ?? "error"}`,
          ),
        );
      });
      this.#host = Comlink.wrap<EngineHost>(worker);
    }
    return this.#host;
  }

  #die(error: EngineError): void {
    if (!this.#life.die(error)) return; // stopped or dead already
    this.#stopHeartbeat();
    for (const listener of this.#deathListeners.splice(0)) listener(error);
    for (const reject of this.#onDeath.splice(0)) reject(error);
    for (const end of this.#streams) end(error);
    this.#streams.clear();
    this.#worker?.terminate();
  }

  /** A remote call that rejects with the death error if the worker dies first. */
  #call<T>(fn: (host: Comlink.Remote<EngineHost>) => Promise<T>): Promise<T> {
    const host = this.#remote();
    return new Promise<T>((resolve, reject) => {
      this.#onDeath.push(reject);
      fn(host).then(resolve, reject).finally(() => {
        const i = this.#onDeath.indexOf(reject);
        if (i >= 0) this.#onDeath.splice(i, 1);
      });
    });
  }

  async start(workerId: bigint): Promise<EngineConfig> {
    this.#life.begin(true);
    const progress = this.onLoadProgress;
    const config = await this.#call((h) =>
      progress
        ? h.start(this.options, workerId, Comlink.proxy(progress))
        : h.start(this.options, workerId)
    );
    // Only once started: a model load may keep the worker busy for long stretches.
    if (this.#life.state === "running") this.#startHeartbeat(this.#remote());
    return config;
  }

  async *generate(
    request: PreprocessedRequest,
    ctx: GenerateContext,
  ): AsyncGenerator<LLMEngineOutput> {
    this.#life.require("generate()");
    if (this.#keys.has(ctx)) {
      throw EngineError.invalidArgument(
        "this GenerateContext is already streaming a request: make one context per request",
      );
    }
    const key = crypto.randomUUID();
    this.#keys.set(ctx, key);
    const { port1, port2 } = new MessageChannel();
    const queue: StreamMessage[] = [];
    let wake: (() => void) | undefined;
    const push = (m: StreamMessage) => {
      queue.push(m);
      wake?.();
    };
    port1.onmessage = (e: MessageEvent<StreamMessage>) => push(e.data);
    const end = (error: EngineError) => push({ kind: "error", error: error.toJSON() });
    this.#streams.add(end);
    const onAbort = () => this.#abortInWorker(key);
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    let ended = false;
    try {
      // An already aborted signal travels with the request: the engine never starts it.
      const aborted = ctx.signal.aborted;
      await this.#call((h) =>
        h.generate(request, key, Comlink.transfer(port2, [port2]), aborted, ctx.requestId)
      );
      if (ctx.signal.aborted && !aborted) onAbort();
      let first = true;
      for (;;) {
        const m = queue.shift();
        if (m === undefined) {
          await new Promise<void>((r) => (wake = r));
          wake = undefined;
          continue;
        }
        if (m.kind === "end" || m.kind === "error") ended = true;
        if (m.kind === "end") return;
        if (m.kind === "error") throw EngineError.fromJSON(m.error);
        for (const c of m.chunks) {
          if (first && c.token_ids.length > 0) {
            ctx.notifyFirstToken();
            first = false;
          }
          if (c.finish_reason !== undefined) ended = true; // nothing left to cancel
          yield c;
        }
      }
    } finally {
      ctx.signal.removeEventListener("abort", onAbort);
      this.#keys.delete(ctx);
      this.#streams.delete(end);
      port1.close();
      // The consumer stopped reading (`break`, `return`, `throw` in its loop): cancel the
      // request in the worker too, or it would run to its end for nobody. Not awaited, so
      // leaving a loop never waits on the worker.
      if (!ended && !ctx.signal.aborted) this.#abortInWorker(key);
    }
  }

  /** Ask the worker to cancel the request `key` (no-op once this engine is stopped or dead). */
  #abortInWorker(key: string): void {
    if (this.#life.state !== "running") return;
    const done = this.#call((h) => h.abort(key)).catch(() => {});
    this.#aborting.add(done);
    void done.finally(() => this.#aborting.delete(done));
  }

  /**
   * What the worker's engine holds now: its request counts, KV blocks in use (onnxruntime-web's
   * engine: request slots) and the streams its host has open; once every request this engine
   * cancelled (a fired signal, a consumer that stopped reading) has ended in the worker.
   * Undefined before `start()` or after the worker stopped.
   */
  async stats(): Promise<HostStats | undefined> {
    if (this.#life.state !== "running") return undefined;
    await Promise.all(this.#aborting);
    return await this.#call((h) => h.stats());
  }

  async abort(ctx: GenerateContext): Promise<void> {
    const key = this.#keys.get(ctx);
    if (this.#life.state === "running" && key !== undefined) await this.#call((h) => h.abort(key));
  }

  /**
   * The worker's engine drains (its own settle timeout); this side stays `running`, so that
   * aborts, stats and cleanup still reach the worker meanwhile.
   */
  async drain(): Promise<void> {
    if (this.#life.state === "running") await this.#call((h) => h.drain());
  }

  /** Clean up the worker's engine (when running), end open streams, end the worker. Idempotent. */
  cleanup(): Promise<void> {
    return this.#life.cleanup(async (was) => {
      this.#stopHeartbeat();
      if (was === "running" && this.#host) {
        await this.#call((h) => h.cleanup()).catch(() => {});
      }
      for (const end of this.#streams) end(EngineError.shutdown("engine cleaned up"));
      this.#streams.clear();
      this.#host?.[Comlink.releaseProxy]();
      this.#host = undefined;
      this.#worker?.terminate();
      this.#worker = undefined;
    });
  }

  /**
   * Dynamo 1.5's `is_quiescent`: false while a request of this engine streams or is still being
   * cancelled in the worker, else the worker's answer; true when no worker runs.
   */
  async isQuiescent(): Promise<boolean | null> {
    if (this.#keys.size > 0 || this.#aborting.size > 0) return false;
    if (this.#life.state !== "running") return true;
    return await this.#call((h) => h.isQuiescent());
  }

  /** The worker engine's health-check probe; null unless running. */
  async healthCheckPayload(): Promise<PreprocessedRequest | null> {
    return this.#life.state === "running" ? await this.#call((h) => h.healthCheckPayload()) : null;
  }

  /** The worker engine's controls; none unless running. */
  async supportedControls(): Promise<string[]> {
    return this.#life.state === "running" ? await this.#call((h) => h.supportedControls()) : [];
  }

  /**
   * Run one of the worker engine's controls. A name it does not offer, or a body that is not a
   * JSON object, is `InvalidArgument`; `EngineShutdown` unless running.
   */
  async engineControl(
    control: string,
    body: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    this.#life.require("engine_control");
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(JSON.stringify(body ?? null));
    } catch (e) {
      throw EngineError.invalidArgument(`engine control ${control}: the body is not JSON`, e);
    }
    return await this.#call((h) => h.engineControl(control, json));
  }

  /** Hand the worker engine where it is served; `EngineShutdown` unless running. */
  async onEndpointReady(endpoint: ServingEndpoint): Promise<void> {
    this.#life.require("on_endpoint_ready");
    await this.#call((h) => h.onEndpointReady({ ...endpoint }));
  }

  async kvEventSources(): Promise<KvEventSource[]> {
    if (this.#life.state !== "running") return [];
    const listeners: ((
      e: Parameters<
        Parameters<Extract<KvEventSource, { kind: "push" }>["onReady"]>[0]["publish"]
      >[0],
    ) => void)[] = [];
    const ranks = await this.#call((h) =>
      h.kvEventSources(Comlink.proxy((e) => listeners.forEach((l) => l(e))))
    );
    return ranks.map((dp_rank) => ({
      kind: "push",
      dp_rank,
      onReady: (p) => void listeners.push((e) => p.publish(e)),
    }));
  }

  async setupMetrics(ctx: MetricsContext): Promise<MetricsBindings> {
    if (this.#life.state !== "running") return { dp_ranks: [] };
    const gauges = ctx.metrics.componentGauges(0);
    const speculation = new SpeculationMetrics();
    speculation.bind(ctx.metrics);
    const dp_ranks = await this.#call((h) =>
      h.setupMetrics(Comlink.proxy((v) => {
        gauges.setTotalBlocks(v.totalBlocks);
        gauges.setGpuCacheUsagePercent(v.usagePercent);
        gauges.setKvCacheHitRate(v.hitRate);
        if (v.prefixCaching !== undefined) gauges.setPrefixCaching(v.prefixCaching);
        speculation.report(v.speculation);
        if (v.load) routerGauges(ctx.metrics).report({ ...v, load: v.load });
      }))
    );
    return { dp_ranks };
  }
}
