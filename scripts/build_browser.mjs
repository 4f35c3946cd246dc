// deno-lint-ignore-file explicit-module-boundary-types
// The npm package's self-contained browser build, `dist/pkg/browser/` (run by
// scripts/build_package.mjs after tsc): two ES modules with every dependency inlined, for pages
// without a bundler.
//
// - `kiln.js`: the main-thread API of `src/worker/` (`openModel`, `WorkerEngine`, the
//   OpenAI-shaped helpers, the Prompt API's `LanguageModel`): every export of the compiled
//   `worker/mod.js` but the engine host's (`HOST_ONLY`, which would pull the whole engine onto
//   the page; checked here). Its `kilnWorker` starts
//   `new URL("./kiln_worker.js", import.meta.url)`: the compiled `worker/worker_module.js` is
//   replaced here by `browserWorkerModule()`, so copying the folder anywhere keeps the pair found.
// - `kiln_worker.js`: Kiln's browser worker (the engine host), bundled from the compiled
//   `adapters/browser/worker.js`; its shaders are already inlined (`gpu/shader_text.js`). What it
//   loads by dynamic `import()` is a `kiln_*.js` file beside it (XGrammar, for guided decoding
//   where no grammar worker can be started).
// - `kiln_grammar_worker.js`: the grammar worker (XGrammar off the engine's thread, guided
//   decoding), which the engine's worker starts on its first constrained request: one file with
//   XGrammar inlined; the compiled `engines/guided/grammar_worker_module.js` is replaced in the
//   engine workers by `browserGrammarWorkerModule()`, which starts it from beside them.
// - `kiln_shared_worker.js`: Kiln's shared worker (one engine per model for every tab of the
//   origin, `openModel({ share: true })`), bundled likewise; its chunks are `kiln_shared_*.js`.
// - `kiln_service_worker.js`: Kiln's service-worker module (the same host, for browsers without
//   WebGPU in a SharedWorker), which an app copies to its origin and registers itself. A service
//   worker cannot `import()`, so it is one file: XGrammar is inlined (hence its size), and runs on
//   its thread (a service worker cannot start workers).
// - `kiln.d.ts`: its types, from the package's `worker/*.d.ts`.
//
// `onnxruntime-web` (the optional peer that only the ONNX Runtime engine loads) stays an external
// import: it is not inlined. `@huggingface/gguf` comes pre-bundled in the compiled
// `formats/gguf/lib.js` (scripts/build_vendor.mjs), so `@huggingface/tasks` is not met here. The
// bundler is rolldown, the one Vite 8 is built on.
import { mkdirSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, sep } from "node:path";
import { build } from "rolldown";

export const BROWSER_DIR = "browser";
/**
 * Module ids that stay imports in the bundles: optional peers, and the Node built-ins XGrammar's
 * emscripten start-up `require`s on Node only (never reached in a page or worker).
 */
const EXTERNAL = /^(onnxruntime-web(\/.*)?|url|module)$/;

/**
 * The lines of a function body that starts a module worker from `file` beside this module, named
 * `name`: through a same-origin blob module that imports it when this module comes from another
 * origin (a CDN, which must serve `file` with CORS, as jsDelivr and unpkg do), since a worker must
 * be same-origin with the realm that starts it. `Worker` is the constructor in scope.
 */
function sameOriginWorker(file, name) {
  return [
    `  const url = new URL("./${file}", import.meta.url);`,
    `  const options = { type: "module", name: "${name}" };`,
    "  if (globalThis.location === undefined || url.origin === globalThis.location.origin) {",
    "    return new Worker(url, options);",
    "  }",
    '  const shim = new Blob([`import ${JSON.stringify(url.href)};`], { type: "text/javascript" });',
    "  const blobUrl = URL.createObjectURL(shim);",
    "  try {",
    "    return new Worker(blobUrl, options);",
    "  } finally {",
    "    setTimeout(() => URL.revokeObjectURL(blobUrl), 60_000);",
    "  }",
  ];
}

/** What replaces `worker/worker_module.js` in `kiln.js`: kiln_worker.js beside it. */
function browserWorkerModule() {
  return [
    "export function kilnWorker() {",
    ...sameOriginWorker("kiln_worker.js", "kiln-engine"),
    "}",
    "",
  ].join("\n");
}

/**
 * What replaces `worker/shared_worker_module.js` in `kiln.js`. A shared worker must be
 * same-origin with the page and a blob module would be one per page (nothing shared), so when
 * kiln.js comes from another origin this throws, and `openModel({ share: true })` runs the page's
 * own worker instead.
 */
function browserSharedWorkerModule() {
  return [
    "export function kilnSharedWorker() {",
    '  const url = new URL("./kiln_shared_worker.js", import.meta.url);',
    "  if (globalThis.location !== undefined && url.origin !== globalThis.location.origin) {",
    '    throw new Error("kiln_shared_worker.js is not same-origin with the page");',
    "  }",
    '  return new SharedWorker(url, { type: "module", name: "kiln-shared-engine" });',
    "}",
    "",
  ].join("\n");
}

/**
 * What replaces `engines/guided/grammar_worker_module.js` in the engine workers: the grammar
 * worker is kiln_grammar_worker.js beside them, through a same-origin blob module when they come
 * from another origin (a worker's nested worker must be same-origin with it too). A realm with no
 * web `Worker` (a service worker, a SharedWorker in Chromium) gets none: XGrammar runs on its
 * thread. The `Worker` is read when the module is evaluated, as the sources' module does.
 */
function browserGrammarWorkerModule() {
  return [
    'const WebWorker = typeof Worker === "function" && "onmessage" in Worker.prototype',
    "  ? Worker",
    "  : undefined;",
    "export function grammarWorker() {",
    "  if (WebWorker === undefined) return undefined;",
    "  const Worker = WebWorker;",
    ...sameOriginWorker("kiln_grammar_worker.js", "kiln-grammar"),
    "}",
    "",
  ].join("\n");
}

/** Exports of `src/worker/mod.ts` that run in a worker only: not in kiln.js. */
const HOST_ONLY = [
  "EngineHost",
  "exposeHost",
  "SharedEngineHost",
  "TabHost",
  "exposeSharedHost",
  "exposeServiceHost",
  "serviceMessage",
];
const ENTRY = "\0kiln-browser-entry";
const entryModule = (outDir) =>
  [
    `export * from ${JSON.stringify(join(outDir, "openai/completions.js"))};`,
    `export * from ${JSON.stringify(join(outDir, "openai/responses.js"))};`,
    `export { WorkerEngine } from ${JSON.stringify(join(outDir, "worker/client.js"))};`,
    `export { KilnModel, kilnSharedWorker, kilnWorker, openModel } from ${
      JSON.stringify(join(outDir, "worker/open.js"))
    };`,
    `export { bindLanguageModel, CreateMonitor, installLanguageModel, KilnLanguageModel } from ${
      JSON.stringify(join(outDir, "worker/language_model.js"))
    };`,
    "",
  ].join("\n");
const DTS = [
  "// The types of kiln.js: src/worker/mod.ts's, less the engine host's.",
  'export * from "../openai/completions.js";',
  'export * from "../openai/responses.js";',
  'export { type Liveness, WorkerEngine } from "../worker/client.js";',
  "export {",
  "  type GenerateOptions,",
  "  KilnModel,",
  "  kilnSharedWorker,",
  "  kilnWorker,",
  "  openModel,",
  "  type OpenModelOptions,",
  "  type Sharing,",
  '} from "../worker/open.js";',
  "export {",
  "  bindLanguageModel,",
  "  CreateMonitor,",
  "  installLanguageModel,",
  "  KilnLanguageModel,",
  '} from "../worker/language_model.js";',
  'export type * from "../worker/language_model_types.js";',
  'export type { SharedWorkerLike } from "../worker/shared_client.js";',
  "export type {",
  "  ServiceRegistrationLike,",
  "  ServiceWorkerLike,",
  "  ServiceWorkerSource,",
  '} from "../worker/service_client.js";',
  'export type { GaugeValues, HostOptions, ModelSpec } from "../worker/protocol.js";',
  "",
].join("\n");

/** XGrammar's published file (a UMD bundle). */
const XGRAMMAR_FILE = /\/@mlc-ai\/web-xgrammar\/lib\/index\.js$/;

/**
 * XGrammar's UMD bundle as a module that hands over the factory its UMD wrapper is given, as
 * `kilnXGrammarFactory`: its `exports`, `module` and `define` are the module's own, so the
 * wrapper takes its AMD path and calls this `define` (where a bundler would otherwise wrap the
 * file as CommonJS and call the factory once). Kiln's loader (`engines/guided/xgrammar.js`)
 * calls it for each fresh instance of the library, its own WASM memory: after a fault in
 * XGrammar the instance is replaced without restarting the worker (or, in the service worker,
 * at all).
 */
function xgrammarFactoryModule(code) {
  return [
    "var kilnXGrammarFactory;",
    "var define = (_deps, factory) => { kilnXGrammarFactory = factory; };",
    "define.amd = {};",
    "var exports = undefined, module = undefined;",
    code,
    "export { kilnXGrammarFactory };",
    "",
  ].join("\n");
}

/**
 * Bundle `input` into `file` (or only return the chunk, when `file` is null). `split`: modules
 * loaded by dynamic `import()` become files of their own beside `file` (`kiln_<name>.js`).
 */
async function bundle(input, file, replace = {}, split = false, chunks = "kiln_") {
  const out = await build({
    input,
    write: file !== null,
    platform: "browser",
    external: EXTERNAL,
    logLevel: "warn",
    plugins: [{
      name: "kiln-browser-seams",
      resolveId(id) {
        return Object.hasOwn(replace, id) ? id : null;
      },
      load(id) {
        return Object.hasOwn(replace, id) ? replace[id] : null;
      },
      transform(code, id) {
        return XGRAMMAR_FILE.test(id.split(sep).join("/")) ? xgrammarFactoryModule(code) : null;
      },
    }],
    output: split
      ? {
        dir: dirname(file),
        entryFileNames: basename(file),
        chunkFileNames: `${chunks}[name].js`,
        format: "esm",
        minify: true,
      }
      : { ...(file ? { file } : {}), format: "esm", minify: true, codeSplitting: false },
  });
  return out.output[0];
}

/** Build `<outDir>/browser/` from the compiled package in `outDir`; returns the files' sizes. */
export async function buildBrowser(outDir) {
  const dir = join(outDir, BROWSER_DIR);
  mkdirSync(dir, { recursive: true });
  const main = await bundle(ENTRY, join(dir, "kiln.js"), {
    [ENTRY]: entryModule(outDir),
    [join(outDir, "worker/worker_module.js")]: browserWorkerModule(),
    [join(outDir, "worker/shared_worker_module.js")]: browserSharedWorkerModule(),
  });
  const all = await bundle(join(outDir, "worker/mod.js"), null);
  const want = all.exports.filter((n) => !HOST_ONLY.includes(n)).sort();
  if (JSON.stringify([...main.exports].sort()) !== JSON.stringify(want)) {
    throw new Error(`kiln.js exports ${main.exports.sort()}, not worker/mod.js's ${want}`);
  }
  // XGrammar (guided decoding's WASM, ~1 MiB) runs in the grammar worker, which the engine's
  // worker starts on its first constrained request only; where it cannot, a chunk of its own.
  const grammarSeam = {
    [join(outDir, "engines/guided/grammar_worker_module.js")]: browserGrammarWorkerModule(),
  };
  await bundle(
    join(outDir, "adapters/browser/worker.js"),
    join(dir, "kiln_worker.js"),
    grammarSeam,
    true,
  );
  await bundle(
    join(outDir, "engines/guided/grammar_worker.js"),
    join(dir, "kiln_grammar_worker.js"),
  );
  // The shared worker (`openModel({ share: true })`): the same engine host, one per origin; its
  // lazily loaded chunks are its own (`kiln_shared_*.js`), as they may import from its entry.
  await bundle(
    join(outDir, "adapters/browser/shared_worker.js"),
    join(dir, "kiln_shared_worker.js"),
    grammarSeam,
    true,
    "kiln_shared_",
  );
  // The service worker (`openModel({ share, serviceWorker })`): one file, dynamic imports inlined.
  await bundle(
    join(outDir, "adapters/browser/service_worker.js"),
    join(dir, "kiln_service_worker.js"),
  );
  writeFileSync(join(dir, "kiln.d.ts"), DTS);
  return Object.fromEntries(
    [
      "kiln.js",
      "kiln_worker.js",
      "kiln_grammar_worker.js",
      "kiln_shared_worker.js",
      "kiln_service_worker.js",
    ].map((
      f,
    ) => [f, statSync(join(dir, f)).size]),
  );
}
