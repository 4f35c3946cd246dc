/**
 * The page's side of an engine hosted by the app's service worker (`worker/service_host.ts`):
 * `connectService` posts a `MessagePort` to the registration's active worker and hands the port
 * to `WorkerEngine` as if it were a dedicated worker, exactly as `connectShared` does with a
 * `SharedWorker`'s port. While connected, the page posts a heartbeat to the service worker
 * itself every `heartbeatMs`, so that the browser does not stop it as idle, and holds a Web Lock
 * that the service worker is granted once the page has gone. A service worker that ends (stopped,
 * crashed, replaced by a new version) is heard at once, as a shared worker is (`portWorker`).
 */
import { installErrorTransfer } from "./protocol.ts";
import { attachTab, holdLock, pageLocks, portWorker } from "./shared_client.ts";
import type { ServiceMessage } from "./service_host.ts";

/** What Kiln uses of a `ServiceWorker` (typed here: Deno's lib has none). */
export interface ServiceWorkerLike {
  /** The worker's script URL. */
  readonly scriptURL?: string;
  /** Post to the worker (its `message` event). */
  postMessage(message: ServiceMessage, transfer?: Transferable[]): void;
}

/** What Kiln uses of a `ServiceWorkerRegistration`. */
export interface ServiceRegistrationLike {
  /** The activated worker, once there is one. */
  readonly active: ServiceWorkerLike | null;
  /** A worker being installed. */
  readonly installing?: ServiceWorkerLike | null;
  /** A worker installed and waiting to activate. */
  readonly waiting?: ServiceWorkerLike | null;
}

/** The app's service worker hosting Kiln's engines: its registration, or its script's URL. */
export type ServiceWorkerSource = ServiceRegistrationLike | string | URL;

/** Timing of a service-worker connection. */
export interface ServiceConnectOptions {
  /** Milliseconds to wait for an active worker and for it to answer (default 60 s). */
  timeoutMs?: number;
  /** Milliseconds between heartbeats to the worker (default 10 s; Chromium idles at 30 s). */
  heartbeatMs?: number;
  /** The interval timer the heartbeat runs on (default the global one; tests drive their own). */
  timers?: IntervalTimers;
}

/** `setInterval` and `clearInterval`, as the heartbeat uses them. */
export interface IntervalTimers {
  setInterval(beat: () => void, ms: number): unknown;
  clearInterval(id: unknown): void;
}

const GLOBAL_TIMERS: IntervalTimers = {
  setInterval: (beat, ms) => setInterval(beat, ms),
  clearInterval: (id) => clearInterval(id as ReturnType<typeof setInterval>),
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The registration of `source`: itself, or the page's registration whose worker runs the script
 * URL `source` (resolved against the page); undefined where the page has none.
 */
async function registration(
  source: ServiceWorkerSource,
): Promise<ServiceRegistrationLike | undefined> {
  if (typeof source !== "string" && !(source instanceof URL)) return source;
  const container = (globalThis.navigator as {
    serviceWorker?: { getRegistrations(): Promise<readonly ServiceRegistrationLike[]> };
  } | undefined)?.serviceWorker;
  if (!container) return undefined;
  const href = new URL(source, globalThis.location?.href).href;
  const all = await container.getRegistrations().catch(() => []);
  return all.find((r) => [r.active, r.waiting, r.installing].some((w) => w?.scriptURL === href));
}

/**
 * Connect to the engine host in the app's service worker `source`; resolves to a `Worker`-shaped
 * endpoint for `WorkerEngine`, or undefined where the page cannot use it (no such registration,
 * no worker activated within `timeoutMs`, no WebGPU in it, or no answer): the caller then runs a
 * dedicated worker.
 */
export async function connectService(
  source: ServiceWorkerSource,
  options: ServiceConnectOptions = {},
): Promise<Worker | undefined> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const heartbeatMs = options.heartbeatMs ?? 10_000;
  const reg = await registration(source);
  if (!reg) return undefined;
  // A registration just made is still installing: wait for its worker to activate.
  const t0 = Date.now();
  while (!reg.active && (reg.installing || reg.waiting) && Date.now() - t0 < timeoutMs) {
    await sleep(50);
  }
  const active = reg.active;
  if (!active) return undefined;
  installErrorTransfer();
  const locks = pageLocks();
  const name = `kiln-tab-${crypto.randomUUID()}`;
  const release = locks ? await holdLock(locks, name) : () => {};
  const { port1, port2 } = new MessageChannel();
  try {
    active.postMessage({ kiln: "connect" }, [port2]);
  } catch {
    release();
    port1.close();
    return undefined;
  }
  // The heartbeat goes to whichever worker is active now (a new version replaces the old one).
  const timers = options.timers ?? GLOBAL_TIMERS;
  const beat = timers.setInterval(() => {
    try {
      (reg.active ?? active).postMessage({ kiln: "heartbeat" });
    } catch { /* the worker is gone: its port or its lifetime lock says so */ }
  }, heartbeatMs);
  const worker = portWorker(port1, {
    onTerminate: () => {
      timers.clearInterval(beat);
      release();
    },
    locks,
  });
  return await attachTab(worker, locks ? name : undefined, timeoutMs);
}
