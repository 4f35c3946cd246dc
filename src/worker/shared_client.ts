/**
 * The page's side of a shared engine: `connectShared` opens a connection to Kiln's `SharedWorker`
 * and hands it to `WorkerEngine` as if it were a dedicated worker, so everything above it (the
 * `LLMEngine` calls, streams, aborts, heartbeat) is the same. While connected the page holds a
 * Web Lock of its own name; the shared worker asks for that lock too, and is granted it when the
 * page has gone (closed, crashed, navigated away) or the engine was cleaned up.
 */
import * as Comlink from "comlink";
import { installErrorTransfer } from "./protocol.ts";
import { SHARED_LOST, type TabAttach, type TabHost } from "./shared_tab.ts";

/** What Kiln uses of a `SharedWorker` (typed here: Deno's and the worker's libs have none). */
export interface SharedWorkerLike extends EventTarget {
  /** The connection to the shared worker. */
  readonly port: MessagePort;
}

/** What Kiln uses of the Web Locks API (`navigator.locks`). */
export interface Locks {
  /** Hold `name` while `callback`'s promise is pending; resolves once released. */
  request(name: string, callback: () => Promise<void> | void): Promise<unknown>;
}

/**
 * How a model's engine is shared: by every tab of the origin through Kiln's `SharedWorker`
 * (`origin`), by every tab through the app's service worker (`service-worker`), or not at all
 * (`none`: the page's own worker).
 */
export type Sharing = "origin" | "service-worker" | "none";

/**
 * A `Worker`-shaped endpoint over a shared worker's `port`, for `WorkerEngine`: `terminate`
 * closes the port and calls `onTerminate`; `error` listeners hear the shared worker's `error`
 * event (its script failed) and the host's word that the engine's device was lost.
 */
export function portWorker(
  port: MessagePort,
  onTerminate: () => void = () => {},
  errors?: EventTarget,
): Worker {
  const onError = new Set<unknown>();
  const fire = (e: unknown) => {
    for (const l of onError) {
      if (typeof l === "function") (l as (e: unknown) => void)(e);
      else (l as { handleEvent(e: unknown): void }).handleEvent(e);
    }
  };
  port.addEventListener("message", (e: MessageEvent) => {
    const lost = (e.data as Record<string, unknown> | null)?.[SHARED_LOST];
    if (typeof lost === "string") fire(new ErrorEvent("error", { message: lost }));
  });
  errors?.addEventListener("error", fire);
  port.start();
  let ended = false;
  const endpoint = {
    postMessage: (message: unknown, transfer: Transferable[] = []) =>
      port.postMessage(message, transfer),
    addEventListener(type: string, listener: EventListenerOrEventListenerObject) {
      if (type === "error") onError.add(listener);
      else port.addEventListener(type, listener);
    },
    removeEventListener(type: string, listener: EventListenerOrEventListenerObject) {
      if (type === "error") onError.delete(listener);
      else port.removeEventListener(type, listener);
    },
    terminate() {
      if (ended) return;
      ended = true;
      errors?.removeEventListener("error", fire);
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
  const locks = (globalThis.navigator as { locks?: Locks } | undefined)?.locks;
  const name = `kiln-tab-${crypto.randomUUID()}`;
  const release = locks ? await holdLock(locks, name) : () => {};
  let shared: SharedWorkerLike;
  try {
    shared = makeSharedWorker();
  } catch {
    release();
    return undefined;
  }
  return await attachTab(
    portWorker(shared.port, release, shared),
    locks ? name : undefined,
    timeoutMs,
  );
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
