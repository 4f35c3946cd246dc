/**
 * The grammar worker an engine's thread starts (`grammar_worker.ts`), in the
 * `new Worker(new URL(...))` form bundlers recognise and bundle the worker for; the package's
 * self-contained browser build replaces this module with one that starts
 * `kiln_grammar_worker.js` beside the engine's worker (`scripts/build_browser.mjs`). None where
 * the realm cannot start a web worker (a service worker, a SharedWorker in Chromium, Node):
 * XGrammar then runs on the engine's thread.
 *
 * The realm's `Worker` is read when this module is evaluated, which `mod.ts` makes happen when
 * an engine's module loads: onnxruntime-web (the `ort` engine), once started, replaces a
 * `Worker` it takes for Node's (Deno's) with `worker_threads`' own, which is not a web worker.
 * @module
 */

/** The realm's web `Worker` (one whose prototype has `onmessage`), if it has one. */
const WebWorker: typeof Worker | undefined = typeof Worker === "function" &&
    "onmessage" in Worker.prototype
  ? Worker
  : undefined;

/** A new grammar worker, or undefined where this realm has no web `Worker`. */
export function grammarWorker(): Worker | undefined {
  if (WebWorker === undefined) return undefined;
  const Worker = WebWorker; // `new Worker(new URL(...))`, as bundlers look for it
  return new Worker(new URL("./grammar_worker.ts", import.meta.url), {
    type: "module",
    name: "kiln-grammar",
  });
}
