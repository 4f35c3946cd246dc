/**
 * The worker `openModel` starts by default. This module is the seam between the two ways Kiln
 * reaches a page: from the sources or the npm package's modules it points at
 * `src/adapters/browser/worker.ts` (bundlers follow the `new Worker(new URL(...))` form); the
 * package's self-contained browser build (`dist/pkg/browser/`) replaces it with one that starts
 * `kiln_worker.js` beside `kiln.js` (`scripts/build_browser.mjs`).
 * @module
 */

/**
 * Kiln's own module Web Worker (`src/adapters/browser/worker.ts`). The `new Worker(new URL(...))`
 * form is the one bundlers (Vite, webpack, Parcel) recognise and bundle the worker for.
 */
export function kilnWorker(): Worker {
  return new Worker(new URL("../adapters/browser/worker.ts", import.meta.url), {
    type: "module",
    name: "kiln-engine",
  });
}
