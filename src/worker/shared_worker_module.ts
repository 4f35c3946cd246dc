/**
 * The shared worker `openModel({ share: true })` connects to: Kiln's `SharedWorker` module
 * (`src/adapters/browser/shared_worker.ts`), in the `new SharedWorker(new URL(...))` form
 * bundlers recognise. The package's self-contained browser build replaces this module with one
 * that starts `kiln_shared_worker.js` beside `kiln.js` (`scripts/build_browser.mjs`).
 * @module
 */

import type { SharedWorkerLike } from "./shared_client.ts";

declare const SharedWorker: new (
  url: URL,
  options: { type: "module"; name: string },
) => SharedWorkerLike;

/** Kiln's shared engine worker (one per origin: every tab connecting to it shares its engines). */
export function kilnSharedWorker(): SharedWorkerLike {
  return new SharedWorker(new URL("../adapters/browser/shared_worker.ts", import.meta.url), {
    type: "module",
    name: "kiln-shared-engine",
  });
}
