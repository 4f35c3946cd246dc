/**
 * XGrammar (`@mlc-ai/web-xgrammar`, C++ compiled to WASM), loaded on first use only: a dynamic
 * `import()`, so a realm that never constrains its output never loads its ~1 MiB (the browser
 * builds put it in the grammar worker's file, see `grammar_worker.ts`).
 *
 * The published file is a UMD bundle. Loaded as a plain module it calls an AMD `define` when
 * there is one; Kiln gives it one for that moment and keeps the factory it is handed, which
 * makes a new, independent library (its own WASM instance and memory) each time it is called:
 * after a fault the old instance is dropped and a fresh one made. Kiln's browser builds hand the
 * same factory over as the module's `kilnXGrammarFactory`. Where the module is evaluated some
 * other way (an app's bundler wrapping it as CommonJS) there is one library per realm, and
 * {@linkcode XGrammarMaker.renewable} says so.
 *
 * Emscripten's start-up reads `location` (a page or a worker) or else CommonJS's `require`,
 * which a Deno module lacks: on a thread with neither `document` nor `location` (Deno's main
 * thread) a `location` naming this module stands in while an instance starts. The `[FATAL]` and
 * `Aborted(...)` lines the library prints when a call fails (the only account of why a schema,
 * regex or grammar is refused) are caught while a call runs under {@linkcode withLibraryErrors},
 * rather than printed.
 */

/** The parts of XGrammar's web API Kiln uses. */
export interface XGrammar {
  TokenizerInfo: {
    createTokenizerInfo(
      encodedVocab: string[],
      vocabType: string,
      prependSpace: boolean,
      vocabSize: number,
      stopTokenIds: number[],
    ): Promise<XTokenizerInfo>;
  };
  GrammarCompiler: {
    createGrammarCompiler(info: XTokenizerInfo, cacheEnabled: boolean): Promise<XCompiler>;
  };
  GrammarMatcher: {
    createGrammarMatcher(
      grammar: XCompiledGrammar,
      overrideStopTokens: number[] | undefined,
      terminateWithoutStopToken: boolean,
      maxRollbackTokens: number,
    ): Promise<XMatcher>;
  };
}

/** XGrammar's view of the model's vocabulary. */
export interface XTokenizerInfo {
  getVocabSize(): number;
  dispose(): void;
}

/** XGrammar's compiler (grammars over one vocabulary). */
export interface XCompiler {
  compileJSONSchema(
    schema: string,
    anyWhitespace: boolean,
    indent: number,
    separators: [string, string],
    strictMode: boolean,
  ): Promise<XCompiledGrammar>;
  compileBuiltinJSONGrammar(): Promise<XCompiledGrammar>;
  compileGrammar(ebnf: string, rootRule: string): Promise<XCompiledGrammar>;
  compileStructuralTag(tag: unknown): Promise<XCompiledGrammar>;
  dispose(): void;
}

/** A grammar compiled over the vocabulary. */
export interface XCompiledGrammar {
  grammar(): { toString(): string; dispose(): void };
  dispose(): void;
}

/** One output's matcher. */
export interface XMatcher {
  acceptToken(id: number): boolean;
  getNextTokenBitmask(): Promise<Int32Array>;
  isTerminated(): boolean;
  rollBack(n: number): void;
  reset(): void;
  findJumpForwardString(): string;
  dispose(): void;
}

/** Makes XGrammar libraries, each with its own WASM instance. */
export interface XGrammarMaker {
  /** A library, its WASM started. */
  make(): Promise<XGrammar>;
  /** Whether `make` can be called more than once (a fresh instance each time). */
  readonly renewable: boolean;
}

let loading: Promise<XGrammarMaker> | undefined;
let sink: string[] | undefined;

/** The maker of XGrammar libraries of this realm (the module is loaded once). */
export function xgrammarMaker(): Promise<XGrammarMaker> {
  return loading ??= loadMaker().catch((e) => {
    loading = undefined;
    throw e;
  });
}

/** One XGrammar library, its WASM started (the realm's first, or a fresh one). */
export async function loadXGrammar(): Promise<XGrammar> {
  return await (await xgrammarMaker()).make();
}

type Factory = (exports: Record<string, unknown>) => void;
type Define = ((deps: unknown, factory: Factory) => void) & { amd?: unknown };

async function loadMaker(): Promise<XGrammarMaker> {
  const g = globalThis as Record<string, unknown>;
  let factory: Factory | undefined;
  // Only where no AMD loader is installed already (a page's own is left alone).
  const capture = g.define === undefined;
  if (capture) {
    const define: Define = (_deps, f) => void (factory = f);
    define.amd = {};
    g.define = define;
  }
  let mod: Record<string, unknown>;
  try {
    mod = await withShims(() => import("@mlc-ai/web-xgrammar") as Promise<Record<string, unknown>>);
  } finally {
    if (capture) delete g.define;
  }
  // Kiln's browser builds hand the factory over as an export (`scripts/build_browser.mjs`).
  factory ??= mod.kilnXGrammarFactory as Factory | undefined;
  if (typeof factory === "function") {
    const f = factory;
    return {
      renewable: true,
      make: () =>
        start(() => {
          const lib: Record<string, unknown> = {};
          f(lib);
          return lib;
        }),
    };
  }
  const only = [mod, mod.default, g.xgrammar].find(isXGrammar);
  if (only === undefined) throw new Error("@mlc-ai/web-xgrammar: no TokenizerInfo in the module");
  let made = false;
  return {
    renewable: false,
    make: () => {
      if (made) throw new Error("XGrammar cannot be started again in this realm");
      made = true;
      return start(() => only);
    },
  };
}

/** A library from `make`, its WASM started now, while the shims are in place. */
function start(make: () => unknown): Promise<XGrammar> {
  return withShims(() =>
    reusingModule(async () => {
      const xg = make();
      if (!isXGrammar(xg)) throw new Error("@mlc-ai/web-xgrammar: no TokenizerInfo in the library");
      // A one-token vocabulary starts the WASM (emscripten binds its printers then).
      (await xg.TokenizerInfo.createTokenizerInfo([""], "raw", false, 1, [0])).dispose();
      return xg;
    })
  );
}

/** The library's WASM module, compiled once per realm for all its instances. */
let wasm: { bytes: Uint8Array; module: WebAssembly.Module } | undefined;

/** Whether `a` and `b` are the same bytes (a sample of them: this only tells the WASM apart). */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  const step = Math.max(1, Math.floor(a.length / 4096));
  for (let i = 0; i < a.length; i += step) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Run `call` (an instance's start) with `WebAssembly.instantiate` instantiating the module it
 * compiled before when given the same bytes again: an instance's start then costs ~10 ms rather
 * than ~30 (the library decodes its inlined WASM each time). Put back after.
 */
async function reusingModule<T>(call: () => Promise<T>): Promise<T> {
  const { instantiate } = WebAssembly;
  const reuse = (async (source: BufferSource, imports?: WebAssembly.Imports) => {
    const bytes = ArrayBuffer.isView(source)
      ? new Uint8Array(source.buffer, source.byteOffset, source.byteLength)
      : new Uint8Array(source);
    if (wasm !== undefined && sameBytes(wasm.bytes, bytes)) {
      return { module: wasm.module, instance: await instantiate(wasm.module, imports) };
    }
    const made = await instantiate(source, imports);
    wasm = { bytes: bytes.slice(), module: made.module };
    return made;
  }) as typeof WebAssembly.instantiate;
  WebAssembly.instantiate = reuse;
  try {
    return await call();
  } finally {
    if (WebAssembly.instantiate === reuse) WebAssembly.instantiate = instantiate;
  }
}

let shims: Promise<unknown> = Promise.resolve();

/**
 * Run `call` with a `location` standing in where the realm has none, and `console.error`
 * replaced by a printer that catches the library's failure lines (emscripten binds it when an
 * instance starts and keeps it); both are put back after. Calls are chained.
 */
function withShims<T>(call: () => Promise<T>): Promise<T> {
  const run = shims.then(async () => {
    const g = globalThis as Record<string, unknown>;
    const shim = typeof g.document === "undefined" && typeof g.location === "undefined";
    const consoleError = console.error;
    console.error = (...args: unknown[]) => {
      const text = args.map(String).join(" ");
      if (/^\[FATAL\]|^Aborted\(/.test(text)) sink?.push(text);
      else consoleError.apply(console, args);
    };
    if (shim) {
      Object.defineProperty(g, "location", {
        value: { href: import.meta.url },
        configurable: true,
        writable: true,
      });
    }
    try {
      return await call();
    } finally {
      if (shim) delete g.location;
      console.error = consoleError;
    }
  });
  shims = run.then(() => {}, () => {});
  return run;
}

function isXGrammar(v: unknown): v is XGrammar {
  return typeof v === "object" && v !== null && "TokenizerInfo" in v && "GrammarCompiler" in v;
}

/**
 * A call into the library that failed: `reason` is the library's own account (its `[FATAL]`
 * line, source file and line dropped) when it gave one; without one the call trapped (a WASM
 * `RuntimeError`, an abort, a C++ exception nobody caught).
 */
export class LibraryError extends Error {
  override readonly name = "LibraryError";
  constructor(readonly reason: string | undefined, readonly raw: string) {
    super(reason ?? raw);
  }
}

let chain: Promise<void> = Promise.resolve();

/**
 * Run `call` with the library's failure lines caught; a failure is rethrown as a
 * {@linkcode LibraryError}. Calls are chained, so two never share the catch.
 */
export function withLibraryErrors<T>(call: () => Promise<T>): Promise<T> {
  const run = chain.then(async () => {
    sink = [];
    try {
      return await call();
    } catch (e) {
      const fatal = sink.find((l) => l.startsWith("[FATAL]"));
      const reason = fatal?.replace(/^\[FATAL\]\s*\S+:\d+:\s*/, "");
      throw new LibraryError(reason, String(e));
    } finally {
      sink = undefined;
    }
  });
  chain = run.then(() => {}, () => {});
  return run;
}
