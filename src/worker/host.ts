/**
 * The engine host: the object a worker exposes with comlink. It owns the engine the options
 * name (`WebGpuEngine`, or onnxruntime-web's `OrtEngine`: see `host_engines.ts`) and streams
 * each request's chunks over its own `MessagePort`, batching what is ready.
 */
import * as Comlink from "comlink";
import { type LLMEngine, RequestContext, type ServingEndpoint } from "../contract/engine.ts";
import { runControl } from "../contract/engine_hooks.ts";
import { EngineError, serializeError } from "../contract/errors.ts";
import type { KvEventPublisher } from "../contract/kv_events.ts";
import type { EngineConfig, LLMEngineOutput, PreprocessedRequest } from "../contract/types.ts";
import type { LoadProgress } from "../runtime/gpu_model.ts";
import type { ModelFiles } from "../formats/source.ts";
import {
  type GaugeValues,
  type HostOptions,
  type HostStats,
  installErrorTransfer,
  type ModelSpec,
  type StreamMessage,
} from "./protocol.ts";
import { HOST_ENGINES, type HostedEngine } from "./host_engines.ts";

/** Maps the model a `start()` call names to the files the engine reads. */
export type FilesFor = (spec: ModelSpec) => ModelFiles;

/**
 * What a worker does when its GPU device is lost, after the engine has failed every request with
 * `EngineShutdown`: fail loudly (an uncaught error), so the `WorkerEngine` that owns it hears an
 * `error` event at once, ends what is left with `Disconnected`, and its owner (`serve`'s
 * supervisor, the demo) brings up a new worker on a new device.
 */
const failLoudly = (e: EngineError): void => {
  setTimeout(() => {
    throw e;
  });
};

/**
 * The worker side of {@linkcode WorkerEngine}: owns a `WebGpuEngine` and serves it over comlink.
 */
export class EngineHost {
  #hosted: HostedEngine | undefined;
  #starting = false;
  #cleaning = false;
  #requests = new Map<string, { ctx: RequestContext; done: Promise<void> }>();
  /** Requests aborted and not yet ended: `stats()` waits for them. */
  #aborting = new Set<Promise<void>>();

  /**
   * A host with no engine yet; `start()` creates it.
   *
   * @param filesFor Maps the `ModelSpec` a `start` call names to the model's files.
   * @param onDeviceLost Called once the GPU device is lost and every request has failed; the
   *   default rethrows the error outside any promise, so the worker dies with an `error` event.
   */
  constructor(
    readonly filesFor: FilesFor,
    readonly onDeviceLost: (e: EngineError) => void = failLoudly,
  ) {}

  /** The engine, once started (for tests in the same thread; not for comlink callers). */
  get engine(): LLMEngine | undefined {
    return this.#hosted?.engine;
  }

  /** Liveness: answered as long as the worker's event loop runs. */
  ping(): boolean {
    return true;
  }

  /** `onProgress` (a comlink proxy) hears the weight upload. */
  async start(
    options: HostOptions,
    workerId: bigint,
    onProgress?: LoadProgress,
  ): Promise<EngineConfig> {
    if (this.#starting) throw EngineError.shutdown("start() called twice");
    this.#starting = true;
    const kind = options.engine ?? "webgpu";
    const make = Object.hasOwn(HOST_ENGINES, kind) ? HOST_ENGINES[kind] : undefined;
    if (!make) throw EngineError.invalidArgument(`unknown engine ${JSON.stringify(kind)}`);
    const hosted = await make(options, this.filesFor(options.model), this.filesFor, onProgress);
    this.#hosted = hosted;
    const config = await hosted.engine.start(workerId);
    // A loss after cleanup() began is the engine destroying its own device, not a failure.
    hosted.deviceLost()?.then((e) => {
      if (!this.#cleaning) this.onDeviceLost(e);
    });
    return config;
  }

  /**
   * Start streaming `request` into `port`; returns at once. `key` is the request's key here (the
   * client makes it: `abort(key)` cancels it); a key already live is refused on the port with
   * `InvalidArgument`, and the live request is untouched. `label` is the caller's request id,
   * for the engine's context. `aborted`: the caller's signal had already fired, so the engine
   * sees a cancelled request from its first look (and ends it `cancelled` before any token).
   */
  generate(
    request: PreprocessedRequest,
    key: string,
    port: Pick<MessagePort, "postMessage" | "close">,
    aborted = false,
    label: string = key,
  ): void {
    const send = (m: StreamMessage) => port.postMessage(m);
    if (this.#requests.has(key)) {
      const error = EngineError.invalidArgument(`request key ${JSON.stringify(key)} is live`);
      send({ kind: "error", error: serializeError(error) });
      port.close();
      return;
    }
    const ctx = new RequestContext({ requestId: label });
    if (aborted) ctx.stop();
    let ended!: () => void;
    const entry = { ctx, done: new Promise<void>((r) => (ended = r)) };
    this.#requests.set(key, entry);
    const engine = this.#hosted?.engine;
    void (async () => {
      try {
        if (!engine) throw EngineError.shutdown("generate() before start()");
        let pending: LLMEngineOutput[] = [];
        let scheduled = false;
        const flush = () => {
          scheduled = false;
          if (pending.length > 0) send({ kind: "chunks", chunks: pending });
          pending = [];
        };
        for await (const chunk of engine.generate(request, ctx)) {
          pending.push(chunk);
          // Batch whatever arrives in the same turn of the event loop.
          if (!scheduled) {
            scheduled = true;
            queueMicrotask(flush);
          }
        }
        flush();
        send({ kind: "end" });
      } catch (e) {
        send({ kind: "error", error: serializeError(EngineError.from(e)) });
      } finally {
        if (this.#requests.get(key) === entry) this.#requests.delete(key);
        port.close();
        ended();
      }
    })();
  }

  /**
   * Cancel the request `key`, if it is still running; resolves once its stream has ended in this
   * worker (the engine then holds nothing for it but what its next step frees).
   */
  async abort(key: string): Promise<void> {
    const r = this.#requests.get(key);
    if (r === undefined) return;
    r.ctx.stop();
    this.#aborting.add(r.done);
    try {
      await r.done;
    } finally {
      this.#aborting.delete(r.done);
    }
  }

  /**
   * The engine's request counts and KV blocks in use, and the streams this host has open; once
   * every request aborted before this call has ended. Undefined before `start()`.
   */
  async stats(): Promise<HostStats | undefined> {
    await Promise.all(this.#aborting);
    const engine = this.#hosted?.stats();
    return engine && { ...engine, streams: this.#requests.size };
  }

  /** Stop admitting requests and wait for the running ones (no-op before `start()`). */
  async drain(): Promise<void> {
    await this.#hosted?.engine.drain?.();
  }

  /** Cancel every running request and release the engine (no-op before `start()`). */
  async cleanup(): Promise<void> {
    this.#cleaning = true;
    for (const { ctx } of this.#requests.values()) ctx.stop();
    await this.#hosted?.engine.cleanup();
  }

  /**
   * Connect the engine's KV event sources to `publish` (a comlink proxy); returns their
   * data-parallel ranks.
   */
  async kvEventSources(
    publish: (event: Parameters<KvEventPublisher["publish"]>[0]) => void,
  ): Promise<number[]> {
    const sources = await this.#hosted?.engine.kvEventSources?.() ?? [];
    for (const s of sources) if (s.kind === "push") s.onReady({ publish: (e) => void publish(e) });
    return sources.map((s) => s.dp_rank);
  }

  /**
   * Dynamo 1.5's `is_quiescent`: false while a request streams here or the engine says so,
   * else true (this host knows its streams when the engine cannot tell).
   */
  async isQuiescent(): Promise<boolean> {
    if (this.#requests.size > 0 || this.#aborting.size > 0) return false;
    return await this.#hosted?.engine.isQuiescent?.() ?? true;
  }

  /** The engine's health-check probe (null without one, or before `start()`). */
  async healthCheckPayload(): Promise<PreprocessedRequest | null> {
    return await this.#hosted?.engine.healthCheckPayload?.() ?? null;
  }

  /** The engine's controls (none without any, or before `start()`). */
  async supportedControls(): Promise<string[]> {
    return await this.#hosted?.engine.supportedControls?.() ?? [];
  }

  /** Run one of the engine's controls; a name it does not offer is `InvalidArgument`. */
  async engineControl(
    control: string,
    body: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    const engine = this.#hosted?.engine;
    if (!engine) throw EngineError.shutdown("engine_control before start()");
    return await (engine.engineControl?.(control, body) ?? runControl({}, control, body));
  }

  /** Hand the engine where it is served (no-op for an engine without the hook). */
  async onEndpointReady(endpoint: ServingEndpoint): Promise<void> {
    await this.#hosted?.engine.onEndpointReady?.(endpoint);
  }

  /** Push the engine's KV gauges to the main thread after every step. */
  setupMetrics(onGauges: (values: GaugeValues) => void): number[] {
    return this.#hosted?.onGauges((v) => void onGauges(v)) ? [0] : [];
  }
}

/** Expose a host on this worker's global scope. The worker file calls only this. */
export function exposeHost(filesFor: FilesFor): void {
  installErrorTransfer();
  Comlink.expose(new EngineHost(filesFor));
}
