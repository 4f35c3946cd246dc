/**
 * A Deno Worker standing in for Kiln's SharedWorker: the shared host as
 * `src/adapters/browser/shared_worker.ts` runs it (its lifetime Web Lock held, each connection a
 * `serveTab`), with each port posted to it taken as a tab's connection (a `connect` event's port).
 */
import { specFiles } from "../../src/adapters/deno/file_source.ts";
import { installErrorTransfer } from "../../src/worker/protocol.ts";
import { holdLifetimeLock, serveTab, SharedEngineHost } from "../../src/worker/shared_host.ts";

installErrorTransfer();
const shared = new SharedEngineHost(specFiles);
const lifetime = holdLifetimeLock(shared.locks);
globalThis.addEventListener("message", (event) => {
  const port = (event as MessageEvent).ports[0];
  if (port) serveTab(shared, port, lifetime);
});
