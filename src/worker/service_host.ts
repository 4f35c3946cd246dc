/**
 * One engine per model for every tab of an origin, hosted by a service worker: the fallback where
 * a browser gives no WebGPU in a `SharedWorker`. The same {@linkcode SharedEngineHost} as the
 * shared worker's; only the way a tab connects differs. A tab posts a `MessagePort` to the
 * registration's active worker (`{ kiln: "connect" }`), and the port gets its own
 * {@linkcode TabHost} over comlink. A browser stops an idle service worker (Chromium after ~30 s)
 * and messages on a port may not count as activity, so each connected tab also posts
 * `{ kiln: "heartbeat" }` to the worker itself every few seconds; the worker has nothing to do
 * with it but receive it. A worker that ends anyway (stopped, crashed, replaced) is heard by its
 * tabs at once, as a shared worker is: by their ports and its lifetime lock.
 */
import type { FilesFor } from "./host.ts";
import { installErrorTransfer } from "./protocol.ts";
import {
  holdLifetimeLock,
  serveTab,
  SharedEngineHost,
  type SharedHostOptions,
} from "./shared_host.ts";

/** What a tab posts to the service worker: a connection (with its port), or a heartbeat. */
export interface ServiceMessage {
  /** `connect`: the transferred port is the tab's connection; `heartbeat`: keep running. */
  kiln: "connect" | "heartbeat";
}

/**
 * Handle a message the service worker received: a `connect` exposes a new {@linkcode TabHost} of
 * `shared` on `ports[0]`, which learns the worker's lifetime lock `lifetime` (see
 * `holdLifetimeLock`). Returns whether the message was Kiln's (an app's own service worker
 * importing this may handle the rest).
 */
export function serviceMessage(
  shared: SharedEngineHost,
  data: unknown,
  ports: readonly MessagePort[],
  lifetime?: Promise<string | undefined>,
): boolean {
  const kiln = (data as Partial<ServiceMessage> | null | undefined)?.kiln;
  if (kiln === "heartbeat") return true;
  if (kiln !== "connect") return false;
  const port = ports[0];
  if (!port) return true;
  serveTab(shared, port, lifetime);
  return true;
}

/** What Kiln uses of a `ServiceWorkerGlobalScope` (Deno's and the worker's libs have none). */
interface ServiceScope extends EventTarget {
  skipWaiting(): Promise<void>;
  clients: { claim(): Promise<void> };
}

/**
 * Serve a {@linkcode SharedEngineHost} from this service worker: a new version takes over at once
 * (`skipWaiting`, `clients.claim()`), and every tab posting `{ kiln: "connect" }` with a port
 * gets its own {@linkcode TabHost} on it. The service worker file calls only this.
 */
export function exposeServiceHost(
  filesFor: FilesFor,
  options: SharedHostOptions = {},
): SharedEngineHost {
  installErrorTransfer();
  const shared = new SharedEngineHost(filesFor, options);
  const lifetime = holdLifetimeLock(shared.locks);
  const scope = globalThis as unknown as ServiceScope;
  scope.addEventListener("install", () => void scope.skipWaiting());
  scope.addEventListener("activate", (event) => {
    (event as Event & { waitUntil(p: Promise<unknown>): void }).waitUntil(scope.clients.claim());
  });
  scope.addEventListener("message", (event) => {
    const e = event as MessageEvent;
    serviceMessage(shared, e.data, e.ports, lifetime);
  });
  return shared;
}
