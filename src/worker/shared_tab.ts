/**
 * One tab's session on a shared host: what the tab's `WorkerEngine` calls over comlink (the same
 * calls as `EngineHost`'s). Its requests are its own: their ids are prefixed with the session's,
 * so two tabs may use the same id, and `abort` reaches only this tab's. `drain` waits for this
 * tab's requests only, and `cleanup` detaches this tab (cancelling its streams) without touching
 * the others'. A tab that closes is noticed by its Web Lock: the tab holds a lock named in
 * `attach` until it goes away, and this session asks for the same lock; being granted it means
 * the tab is gone, and the session then detaches as `cleanup` does.
 */
import type { LLMEngine } from "../contract/engine.ts";
import { EngineError, serializeError } from "../contract/errors.ts";
import type { EngineConfig, PreprocessedRequest } from "../contract/types.ts";
import type { LoadProgress } from "../runtime/gpu_model.ts";
import type { KvEventPublisher } from "../contract/kv_events.ts";
import type { EngineHost } from "./host.ts";
import type { GaugeValues, HostOptions, HostStats, StreamMessage } from "./protocol.ts";

/** What Kiln uses of the Web Locks API (`navigator.locks`). */
export interface Locks {
  /** Hold `name` while `callback`'s promise is pending; resolves once released. */
  request(name: string, callback: () => Promise<void> | void): Promise<unknown>;
}

/** `HostStats` as a tab of a shared host sees them. */
export interface SharedHostStats extends HostStats {
  /** Tabs (connections) attached to this tab's engine now, this one included. */
  tabs: number;
  /** Models this shared worker has loaded since it started (a join is not a load). */
  loads: number;
  /** Engines loaded now. */
  engines: number;
}

/** A KV event, as the engine publishes it. */
export type KvEvent = Parameters<KvEventPublisher["publish"]>[0];

/** One loaded (or loading) engine and the tabs using it. */
export interface SharedEngine {
  /** Its model's key (`modelKey`). */
  readonly key: string;
  /** The host running the engine (as a dedicated worker would). */
  readonly host: EngineHost;
  /** Resolves with the engine's config once loaded. */
  readonly ready: Promise<EngineConfig>;
  /** The tabs attached to it. */
  readonly tabs: Set<TabHost>;
  /** Listeners of the load, one per tab waiting on it. */
  readonly progress: Set<LoadProgress>;
  /** The tabs' gauge listeners (the engine's are pushed to each). */
  readonly gauges: Set<(v: GaugeValues) => void>;
  /** The tabs' KV event listeners. */
  readonly kvEvents: Set<(e: KvEvent) => void>;
  /** The ranks `kvEventSources` gave, once asked (asked of the engine once). */
  kvRanks?: Promise<number[]>;
  /** Whether the engine pushes gauges, once asked (asked of the engine once). */
  gaugeRanks?: number[];
  /** The pending release, while no tab uses it. */
  release?: unknown;
}

/**
 * What a tab's session calls on the origin-wide host (`SharedEngineHost` in `shared_host.ts`):
 * join and leave an engine, the Web Locks and WebGPU probe, the load counts.
 */
export interface TabOwner {
  /** The Web Locks a tab's liveness is read from, when there are any. */
  readonly locks: Locks | undefined;
  /** Models loaded since the host started (a join is not a load). */
  readonly loads: number;
  /** Engines loaded now. */
  readonly engines: number;
  /** Whether this worker can open a WebGPU device. */
  webgpu(): Promise<boolean>;
  /** Attach `tab` to the engine for `options`, loading it if no tab has. */
  join(
    tab: TabHost,
    options: HostOptions,
    workerId: bigint,
    onProgress?: LoadProgress,
  ): SharedEngine;
  /** `tab` is gone: forget it; its engine's last tab schedules the engine's release. */
  leave(tab: TabHost, entry: SharedEngine | undefined): void;
}

/** What a tab learns when it attaches. */
export interface TabAttach {
  /** Whether the shared worker can open a WebGPU device (if not, the tab runs its own worker). */
  webgpu: boolean;
}

/** A tab's session on a shared host ({@linkcode TabOwner}). */
export class TabHost {
  #entry: SharedEngine | undefined;
  #starting = false;
  #detached = false;
  #draining = false;
  /** This tab's running requests, by prefixed id: resolves when each has ended. */
  readonly #requests = new Map<string, Promise<void>>();
  #gauges: ((v: GaugeValues) => void) | undefined;
  #kv: ((e: KvEvent) => void) | undefined;

  /** A session of `shared`; `SharedEngineHost.connect` makes it (call that instead). */
  constructor(
    /** The origin-wide host. */
    readonly shared: TabOwner,
    /** The session's id, the prefix of its requests' ids in the engine. */
    readonly id: string,
    /** Reaches the tab outside any call (its engine's device lost). */
    readonly notify: (lost: EngineError) => void,
  ) {}

  /** The engine this tab uses, once started (for tests in the same thread). */
  get engine(): LLMEngine | undefined {
    return this.#entry?.host.engine;
  }

  /** Liveness: answered as long as the shared worker's event loop runs. */
  ping(): boolean {
    return true;
  }

  /**
   * Say which Web Lock the tab holds while alive (the session detaches once it is granted here),
   * and learn whether this worker has WebGPU.
   */
  async attach(lockName?: string): Promise<TabAttach> {
    const locks = this.shared.locks;
    if (lockName !== undefined && locks) {
      void locks.request(lockName, () => this.cleanup()).catch(() => {});
    }
    return { webgpu: await this.shared.webgpu() };
  }

  /** Load the model, or join the engine another tab loaded for the same model. */
  async start(
    options: HostOptions,
    workerId: bigint,
    onProgress?: LoadProgress,
  ): Promise<EngineConfig> {
    if (this.#starting || this.#detached) throw EngineError.shutdown("start() called twice");
    this.#starting = true;
    const entry = this.#entry = this.shared.join(this, options, workerId, onProgress);
    return await entry.ready;
  }

  #engine(): SharedEngine | undefined {
    return this.#detached ? undefined : this.#entry;
  }

  /** Start streaming `request` into `port` (see `EngineHost.generate`); returns at once. */
  generate(
    request: PreprocessedRequest,
    key: string,
    port: MessagePort,
    aborted = false,
    label: string = key,
  ): void {
    const entry = this.#engine();
    // Scoped to this tab: no tab can name another tab's request.
    const id = `${this.id}/${key}`;
    const refusal = !entry || this.#draining
      ? EngineError.shutdown(this.#draining ? "this tab is draining" : "generate() before start()")
      : this.#requests.has(id)
      ? EngineError.invalidArgument(`request key ${JSON.stringify(key)} is live`)
      : undefined;
    if (!entry || refusal) {
      const m: StreamMessage = { kind: "error", error: serializeError(refusal!) };
      port.postMessage(m);
      port.close();
      return;
    }
    let ended!: () => void;
    const done = new Promise<void>((r) => (ended = r));
    this.#requests.set(id, done);
    entry.host.generate(
      request,
      id,
      {
        postMessage: (m: StreamMessage) => port.postMessage(m),
        close: () => {
          if (this.#requests.get(id) === done) this.#requests.delete(id);
          port.close();
          ended();
        },
      },
      aborted,
      label,
    );
  }

  /** Cancel this tab's request `key`; resolves once its stream has ended. */
  async abort(key: string): Promise<void> {
    await this.#entry?.host.abort(`${this.id}/${key}`);
  }

  /**
   * The engine's stats (shared by every tab: requests, KV blocks, steps), this tab's open
   * streams, and the sharing's counts. Undefined before `start()` or once detached.
   */
  async stats(): Promise<SharedHostStats | undefined> {
    const entry = this.#engine();
    const s = await entry?.host.stats();
    if (!entry || !s) return undefined;
    return {
      ...s,
      streams: this.#requests.size,
      tabs: entry.tabs.size,
      loads: this.shared.loads,
      engines: this.shared.engines,
    };
  }

  /** Stop admitting this tab's requests and wait for its running ones (the engine runs on). */
  async drain(): Promise<void> {
    this.#draining = true;
    await Promise.all(this.#requests.values());
  }

  /** Detach: cancel this tab's streams and let go of the engine (others keep it). */
  async cleanup(): Promise<void> {
    if (this.#detached) return;
    this.#detached = true;
    const entry = this.#entry;
    if (entry) {
      if (this.#gauges) entry.gauges.delete(this.#gauges);
      if (this.#kv) entry.kvEvents.delete(this.#kv);
      const ids = [...this.#requests.keys()];
      await Promise.all(ids.map((id) => entry.host.abort(id).catch(() => {})));
    }
    this.shared.leave(this, entry);
  }

  /** Hear the engine's KV events (`publish`: a comlink proxy); returns their ranks. */
  async kvEventSources(publish: (event: KvEvent) => void): Promise<number[]> {
    const entry = this.#engine();
    if (!entry) return [];
    await entry.ready;
    this.#kv = (e) => void publish(e);
    entry.kvEvents.add(this.#kv);
    entry.kvRanks ??= entry.host.kvEventSources((e) => {
      for (const l of entry.kvEvents) l(e);
    });
    return await entry.kvRanks;
  }

  /** Hear the engine's KV gauges after every step. */
  setupMetrics(onGauges: (values: GaugeValues) => void): number[] {
    const entry = this.#engine();
    if (!entry) return [];
    this.#gauges = (v) => void onGauges(v);
    entry.gauges.add(this.#gauges);
    entry.gaugeRanks ??= entry.host.setupMetrics((v) => {
      for (const l of entry.gauges) l(v);
    });
    return entry.gaugeRanks;
  }

  /** The engine's device was lost: tell the tab (its `WorkerEngine` ends what is left). */
  lost(error: EngineError): void {
    this.#detached = true;
    this.shared.leave(this, undefined);
    this.notify(error);
  }
}

/** The key of the message a shared worker posts on a tab's port when the tab's engine is lost. */
export const SHARED_LOST = "kilnSharedLost";
