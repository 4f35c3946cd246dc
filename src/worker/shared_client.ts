/**
 * The page's side of a shared engine: `connectShared` opens a connection to Kiln's `SharedWorker`
 * and hands it to `WorkerEngine` as if it were a dedicated worker, so everything above it (the
 * `LLMEngine` calls, streams, aborts, heartbeat) is the same. While connected the page holds a
 * Web Lock of its own name; the shared worker asks for that lock too, and is granted it when the
 * page has gone (closed, crashed, navigated away) or the engine was cleaned up. The other way
 * round, the page hears at once that the shared worker has gone (`portWorker`).
 */
import * as Comlink from "comlink";
import { installErrorTransfer } from "./protocol.ts";
import { type Locks, SHARED_LOST, type TabAttach, type TabHost } from "./shared_tab.ts";

export type { Locks };

/** What Kiln uses of a `SharedWorker` (typed here: Deno's and the worker's libs have none). */
export interface SharedWorkerLike extends EventTarget {
  /** The connection to the shared worker. */
  readonly port: MessagePort;
}

/**
 * How a model's engine is shared: by every tab of the origin through Kiln's `SharedWorker`
 * (`origin`), by every tab through the app's service worker (`service-worker`), or not at all
 * (`none`: the page's own worker).
 */
export type Sharing = "origin" | "service-worker" | "none";

/**
 * The key of the message a shared host posts on a tab's port with the name of the Web Lock it
 * holds for as long as it lives (see `holdLifetimeLock` in `shared_host.ts`).
 */
export const SHARED_HOST_LOCK = "kilnHostLock";

/** Web Locks whose wait can be given up, as `navigator.locks` has them. */
export interface WaitingLocks {
  /**
   * Wait for `name`, then hold it while `callback`'s promise is pending; rejects (an
   * `AbortError`) if `signal` fires while still waiting.
   */
  request(
    name: string,
    options: { signal: AbortSignal },
    callback: () => Promise<void> | void,
  ): Promise<unknown>;
}

/** How a `portWorker` hears that its host is gone, and what its `terminate` does besides. */
export interface PortWorkerOptions {
  /** Called once `terminate` has closed the port. */
  onTerminate?: () => void;
  /** The `SharedWorker` object: its `error` event (the worker failed) ends the connection. */
  errors?: EventTarget | undefined;
  /** The Web Locks to wait on the host's lifetime lock with (without them, it is not watched). */
  locks?: WaitingLocks | undefined;
}

/**
 * A `Worker`-shaped endpoint over a shared host's `port`, for `WorkerEngine`: `terminate` closes
 * the port and calls `onTerminate`. Its `error` listeners hear the host's word that the engine's
 * device was lost, and the host's end, at once, however it ended (killed, crashed, out of
 * memory): the port's `close` event (the port at the host's end went with its worker), the
 * host's lifetime lock granted here (the browser released it when the worker ended), or the
 * `SharedWorker`'s `error` event. Once the host has ended, an `error` listener added later hears
 * it too.
 */
export function portWorker(port: MessagePort, options: PortWorkerOptions = {}): Worker {
  const { onTerminate = () => {}, errors, locks } = options;
  const onError = new Set<unknown>();
  const call = (l: unknown, e: ErrorEvent) => {
    if (typeof l === "function") (l as (e: unknown) => void)(e);
    else (l as { handleEvent(e: unknown): void }).handleEvent(e);
  };
  const fire = (e: ErrorEvent) => {
    for (const l of onError) call(l, e);
  };
  let ended = false;
  let gone: ErrorEvent | undefined;
  const watch = new AbortController();
  const hostEnded = (why: string) => {
    if (ended || gone) return;
    gone = new ErrorEvent("error", { message: `its shared host ended (${why})` });
    watch.abort();
    fire(gone);
  };
  port.addEventListener("message", (e: MessageEvent) => {
    const data = e.data as Record<string, unknown> | null;
    const lost = data?.[SHARED_LOST];
    if (typeof lost === "string") fire(new ErrorEvent("error", { message: lost }));
    const lock = data?.[SHARED_HOST_LOCK];
    if (typeof lock === "string" && locks && !watch.signal.aborted) {
      locks.request(lock, { signal: watch.signal }, () => hostEnded("its lifetime lock released"))
        .catch(() => {});
    }
  });
  port.addEventListener("close", () => hostEnded("its connection closed"));
  const failed = (e: unknown) => hostEnded(`error: ${(e as ErrorEvent).message || "no message"}`);
  errors?.addEventListener("error", failed);
  port.start();
  const endpoint = {
    postMessage: (message: unknown, transfer: Transferable[] = []) =>
      port.postMessage(message, transfer),
    addEventListener(type: string, listener: EventListenerOrEventListenerObject) {
      if (type !== "error") return port.addEventListener(type, listener);
      onError.add(listener);
      const was = gone;
      if (was) queueMicrotask(() => onError.has(listener) && call(listener, was));
    },
    removeEventListener(type: string, listener: EventListenerOrEventListenerObject) {
      if (type === "error") onError.delete(listener);
      else port.removeEventListener(type, listener);
    },
    terminate() {
      if (ended) return;
      ended = true;
      watch.abort();
      errors?.removeEventListener("error", failed);
      port.close();
      onTerminate();
    },
  };
  return endpoint as unknown as Worker;
}

/** Resolves once `name` is held by this page, until the returned release is called. */
export async function holdLock(locks: Locks, name: string): Promise<() => void> {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  await new Promise<void>((granted, refused) => {
    locks.request(name, () => {
      granted();
      return held;
    }).catch(refused);
  });
  return release;
}

/** This page's Web Locks (`navigator.locks`), where it has them. */
export function pageLocks(): (Locks & WaitingLocks) | undefined {
  return (globalThis.navigator as { locks?: Locks & WaitingLocks } | undefined)?.locks;
}

/**
 * Connect to the shared engine host started by `makeSharedWorker`; resolves to a `Worker`-shaped
 * endpoint for `WorkerEngine`, or undefined where the page cannot share (no `SharedWorker`, no
 * WebGPU in it, its script failed or did not answer within `timeoutMs`): the caller then runs
 * a dedicated worker.
 */
export async function connectShared(
  makeSharedWorker: () => SharedWorkerLike,
  timeoutMs = 60_000,
): Promise<Worker | undefined> {
  if (!("SharedWorker" in globalThis)) return undefined;
  installErrorTransfer();
  const locks = pageLocks();
  const name = `kiln-tab-${crypto.randomUUID()}`;
  const release = locks ? await holdLock(locks, name) : () => {};
  let shared: SharedWorkerLike;
  try {
    shared = makeSharedWorker();
  } catch {
    release();
    return undefined;
  }
  const worker = portWorker(shared.port, { onTerminate: release, errors: shared, locks });
  return await attachTab(worker, locks ? name : undefined, timeoutMs);
}

/** Each attached connection's first proxy, kept alive with it (see `attachTab`). */
const attachedTabs = new WeakMap<Worker, Comlink.Remote<TabHost>>();

/**
 * Attach the connection `worker` (a `portWorker`) to its host as a tab holding the Web Lock
 * `lockName`: resolves to `worker` where the host has WebGPU, or undefined (the connection then
 * closed) where it has none, fails or does not answer within `timeoutMs`.
 */
export async function attachTab(
  worker: Worker,
  lockName: string | undefined,
  timeoutMs: number,
): Promise<Worker | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const failed = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), timeoutMs);
    worker.addEventListener("error", () => resolve(undefined));
  });
  const remote = Comlink.wrap<TabHost>(worker);
  const attached: TabAttach | undefined = await Promise.race([
    remote.attach(lockName),
    failed,
  ]).catch(() => undefined);
  if (attached?.webgpu) {
    clearTimeout(timer);
    // Kept as long as the connection: comlink sends `RELEASE` when its last proxy of an endpoint
    // is garbage-collected, and the host then closes its end of the port. Collected before
    // `WorkerEngine` wraps the endpoint, it would cut the tab off before its `start`.
    attachedTabs.set(worker, remote);
    return worker;
  }
  // It answered but has no WebGPU: detach at once (where there are no Web Locks, nothing else
  // would tell it).
  if (attached) await Promise.race([remote.cleanup(), failed]).catch(() => {});
  clearTimeout(timer);
  worker.terminate();
  return undefined;
}
