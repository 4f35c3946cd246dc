/**
 * One engine per model for every tab of an origin: the host a `SharedWorker` runs. Each tab's
 * connection (`connect()`) gets a {@linkcode TabHost}, the same calls as a dedicated worker's
 * `EngineHost`, so the tab's `WorkerEngine` cannot tell the two apart. The first tab's `start`
 * loads the model; a later tab's `start` naming the same model (and engine kind) joins the
 * running engine and gets its `EngineConfig` without loading again; the engine sizes of the
 * first tab win (the returned config says what they are). A tab naming another model gets an
 * engine of its own, on the same device budget. The last tab of an engine detaching (its
 * `cleanup`, or its Web Lock released because it closed) releases that engine after `graceMs`,
 * unless a tab joins it again first. The other way round, the worker holds a Web Lock of its own
 * for as long as it lives and tells each tab its name: a tab waiting for it hears at once that
 * the worker has ended, however it ended.
 */
import * as Comlink from "comlink";
import type { EngineError } from "../contract/errors.ts";
import type { LoadProgress } from "../runtime/gpu_model.ts";
import { EngineHost, type FilesFor } from "./host.ts";
import { type HostOptions, installErrorTransfer, type ModelSpec } from "./protocol.ts";
import { holdLock, SHARED_HOST_LOCK } from "./shared_client.ts";
import {
  type Locks,
  SHARED_LOST,
  type SharedEngine,
  TabHost,
  type TabOwner,
} from "./shared_tab.ts";

export { TabHost };
export type { KvEvent, SharedEngine, SharedHostStats } from "./shared_tab.ts";

/** A shared host's settings. */
export interface SharedHostOptions {
  /** Milliseconds an engine no tab uses stays loaded, for a reload to find it (default 3000). */
  graceMs?: number;
  /** Whether this worker can open a WebGPU device (default: it can). */
  webgpu?: () => Promise<boolean>;
  /** The Web Locks a tab's liveness is read from (default `navigator.locks`, when there). */
  locks?: Locks;
  /** The timer the grace period runs on (default the global one; tests drive their own). */
  timers?: GraceTimers;
}

/** `setTimeout` and `clearTimeout`, as the grace period uses them. */
export interface GraceTimers {
  /** Calls `release` after `ms` milliseconds; returns what `clearTimeout` takes. */
  setTimeout(release: () => void, ms: number): unknown;
  /** Calls off a timer `setTimeout` set. */
  clearTimeout(id: unknown): void;
}

const GLOBAL_TIMERS: GraceTimers = {
  setTimeout: (release, ms) => setTimeout(release, ms),
  clearTimeout: (id) => clearTimeout(id as ReturnType<typeof setTimeout>),
};

/** What identifies a model across tabs: its spec and the engine kind. */
export function modelKey(options: HostOptions): string {
  const spec: ModelSpec = options.model;
  const where = spec.kind === "files"
    ? spec.files.map((f) => [f.name, f.size, f.lastModified])
    : spec.kind === "url"
    ? spec.base
    : spec.path;
  return JSON.stringify([options.engine ?? "webgpu", spec.kind, where, spec.name]);
}

/**
 * Clean up `entry`'s engine; one still loading (its last tab gone mid-load) is cleaned up once
 * loaded, as the host's `cleanup` before that would find no engine yet.
 */
async function release(entry: SharedEngine): Promise<void> {
  await entry.ready.then(() => entry.host.cleanup(), () => {}).catch(() => {});
}

/** The origin-wide host: engines by model, and the tabs attached to each. */
export class SharedEngineHost implements TabOwner {
  readonly #engines = new Map<string, SharedEngine>();
  readonly #tabs = new Set<TabHost>();
  readonly #timers: GraceTimers;
  #loads = 0;
  #nextTab = 0;
  /** Milliseconds an engine with no tab stays loaded. */
  readonly graceMs: number;

  /**
   * A host with no engine yet; tabs' `start` calls load them.
   *
   * @param filesFor Maps a `start` call's `ModelSpec` to the model's files.
   * @param options Grace period, WebGPU probe, Web Locks.
   */
  constructor(
    /** Maps a `start` call's `ModelSpec` to the model's files. */
    readonly filesFor: FilesFor,
    /** Grace period, WebGPU probe, Web Locks. */
    readonly options: SharedHostOptions = {},
  ) {
    this.graceMs = options.graceMs ?? 3000;
    this.#timers = options.timers ?? GLOBAL_TIMERS;
  }

  /**
   * A new tab's session. `notify` reaches the tab outside any call (its engine's device lost);
   * the browser module posts it on the tab's port.
   */
  connect(notify: (lost: EngineError) => void = () => {}): TabHost {
    const tab = new TabHost(this, `t${this.#nextTab++}`, notify);
    this.#tabs.add(tab);
    return tab;
  }

  /** Tabs connected and not yet detached. */
  get tabs(): number {
    return this.#tabs.size;
  }

  /** Models loaded since this host started. */
  get loads(): number {
    return this.#loads;
  }

  /** Engines loaded (or loading) now. */
  get engines(): number {
    return this.#engines.size;
  }

  /** Whether this worker has WebGPU. */
  webgpu(): Promise<boolean> {
    return this.options.webgpu?.() ?? Promise.resolve(true);
  }

  /** The Web Locks of this worker, if any. */
  get locks(): Locks | undefined {
    return this.options.locks ?? (globalThis.navigator as { locks?: Locks })?.locks;
  }

  /** Attach `tab` to the engine for `options`, loading it if no tab has. */
  join(
    tab: TabHost,
    options: HostOptions,
    workerId: bigint,
    onProgress?: LoadProgress,
  ): SharedEngine {
    const key = modelKey(options);
    let entry = this.#engines.get(key);
    if (entry) {
      this.#timers.clearTimeout(entry.release);
      delete entry.release;
    } else {
      const host = new EngineHost(this.filesFor, (e) => this.#lost(key, e));
      const progress = new Set<LoadProgress>();
      const fanOut: LoadProgress = (...a) => {
        for (const l of progress) {
          try {
            l(...a);
          } catch { /* a tab gone while loading */ }
        }
      };
      this.#loads++;
      const ready = host.start(options, workerId, fanOut);
      entry = {
        key,
        host,
        ready,
        tabs: new Set(),
        progress,
        gauges: new Set(),
        kvEvents: new Set(),
      };
      const e = entry;
      this.#engines.set(key, e);
      // A failed load is forgotten, so the next start tries again.
      ready.catch(() => {
        if (this.#engines.get(key) === e) this.#engines.delete(key);
        void host.cleanup().catch(() => {});
      });
    }
    entry.tabs.add(tab);
    if (onProgress) entry.progress.add(onProgress);
    const e = entry;
    void e.ready.finally(() => onProgress && e.progress.delete(onProgress)).catch(() => {});
    return entry;
  }

  /** `tab` is gone: forget it; its engine's last tab schedules the engine's release. */
  leave(tab: TabHost, entry: SharedEngine | undefined): void {
    this.#tabs.delete(tab);
    if (!entry || !entry.tabs.delete(tab) || entry.tabs.size > 0) return;
    if (this.#engines.get(entry.key) !== entry) return;
    entry.release = this.#timers.setTimeout(() => {
      if (entry.tabs.size > 0 || this.#engines.get(entry.key) !== entry) return;
      this.#engines.delete(entry.key);
      void release(entry);
    }, this.graceMs);
  }

  /** Release every engine now (tests; a worker closing). */
  async close(): Promise<void> {
    const all = [...this.#engines.values()];
    this.#engines.clear();
    for (const e of all) this.#timers.clearTimeout(e.release);
    await Promise.all(all.map(release));
  }

  /** The engine `key` lost its device: its tabs hear it; the next start loads again. */
  #lost(key: string, error: EngineError): void {
    const entry = this.#engines.get(key);
    if (!entry) return;
    this.#engines.delete(key);
    for (const tab of entry.tabs) tab.lost(error);
    void entry.host.cleanup().catch(() => {});
  }
}

/**
 * Hold a Web Lock of a new name for as long as this worker lives: the browser releases it when the
 * worker ends, however it ends, and a tab waiting for it is then granted it (see `portWorker`).
 * Resolves to the name once held; undefined without Web Locks.
 */
export async function holdLifetimeLock(locks: Locks | undefined): Promise<string | undefined> {
  if (!locks) return undefined;
  const name = `kiln-host-${crypto.randomUUID()}`;
  return await holdLock(locks, name).then(() => name, () => undefined);
}

/**
 * Serve a new {@linkcode TabHost} of `shared` on `port`, a tab's connection, over comlink: the
 * tab hears on the port that its engine's device was lost, and the name of this worker's
 * lifetime lock (`lifetime`, from `holdLifetimeLock`) once held.
 */
export function serveTab(
  shared: SharedEngineHost,
  port: MessagePort,
  lifetime?: Promise<string | undefined>,
): TabHost {
  const tab = shared.connect((e) => port.postMessage({ [SHARED_LOST]: e.message }));
  Comlink.expose(tab, port);
  void lifetime?.then((name) => name && port.postMessage({ [SHARED_HOST_LOCK]: name }));
  return tab;
}

/**
 * Serve a {@linkcode SharedEngineHost} from this `SharedWorker`: every connecting tab gets its own
 * {@linkcode TabHost} over comlink on its port (`serveTab`), and learns this worker's lifetime
 * lock. The shared worker file calls only this.
 */
export function exposeSharedHost(filesFor: FilesFor, options: SharedHostOptions = {}): void {
  installErrorTransfer();
  const shared = new SharedEngineHost(filesFor, options);
  const lifetime = holdLifetimeLock(shared.locks);
  globalThis.addEventListener("connect", (event) => {
    const port = (event as MessageEvent).ports[0];
    if (port) serveTab(shared, port, lifetime);
  });
}
