/**
 * XGrammar (`@mlc-ai/web-xgrammar`, C++ compiled to WASM), loaded on first use only: a dynamic
 * `import()`, so an engine or page that never constrains its output never loads its ~1 MiB (the
 * browser bundle puts it in a chunk of its own).
 *
 * The published file is a UMD bundle: under ESM it puts the library on `globalThis.xgrammar`,
 * and emscripten's start-up reads `location` (a page or a worker) or else CommonJS's `require`
 * and `__filename`, which a Deno module lacks. So on a thread with neither `document` nor
 * `location` (Deno's main thread) a `location` naming this module stands in while the module
 * loads and its WASM starts, and is removed at once after. `[FATAL]` lines the library prints
 * before it aborts a call (the only account of why a schema, regex or grammar is refused) are
 * caught while a call runs under {@linkcode withLibraryErrors}, rather than printed.
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

export interface XTokenizerInfo {
  getVocabSize(): number;
  dispose(): void;
}

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

export interface XCompiledGrammar {
  grammar(): { toString(): string; dispose(): void };
  dispose(): void;
}

export interface XMatcher {
  acceptToken(id: number): boolean;
  getNextTokenBitmask(): Promise<Int32Array>;
  isTerminated(): boolean;
  rollBack(n: number): void;
  reset(): void;
  findJumpForwardString(): string;
  dispose(): void;
}

let loading: Promise<XGrammar> | undefined;
let sink: string[] | undefined;

/** XGrammar, loaded and its WASM started (once per thread). */
export function loadXGrammar(): Promise<XGrammar> {
  return loading ??= load().catch((e) => {
    loading = undefined;
    throw e;
  });
}

async function load(): Promise<XGrammar> {
  const g = globalThis as Record<string, unknown>;
  const shim = typeof g.document === "undefined" && typeof g.location === "undefined";
  // Emscripten binds its error printer when its module starts: give it one that can be caught.
  const consoleError = console.error;
  console.error = (...args: unknown[]) => {
    const text = args.map(String).join(" ");
    if (sink !== undefined && /^\[FATAL\]|^Aborted\(/.test(text)) sink.push(text);
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
    const mod = await import("@mlc-ai/web-xgrammar") as Record<string, unknown>;
    const xg = [mod, mod.default, g.xgrammar].find(isXGrammar);
    if (xg === undefined) throw new Error("@mlc-ai/web-xgrammar: no TokenizerInfo in the module");
    // Start the WASM now, while `location` stands in (a one-token vocabulary).
    (await xg.TokenizerInfo.createTokenizerInfo([""], "raw", false, 1, [0])).dispose();
    return xg;
  } finally {
    if (shim) delete g.location;
    // Emscripten's printer keeps the catching function; everyone else gets theirs back.
    console.error = consoleError;
  }
}

function isXGrammar(v: unknown): v is XGrammar {
  return typeof v === "object" && v !== null && "TokenizerInfo" in v && "GrammarCompiler" in v;
}

/**
 * Run `call` with the library's `[FATAL]` messages caught; a failure is rethrown as an `Error`
 * whose message is the library's reason (its source file and line dropped). Calls are chained,
 * so two never share the catch.
 */
export function withLibraryErrors<T>(call: () => Promise<T>): Promise<T> {
  const run = chain.then(async () => {
    sink = [];
    try {
      return await call();
    } catch (e) {
      const why = sink.find((l) => l.startsWith("[FATAL]"));
      throw new Error(why ? why.replace(/^\[FATAL\]\s*\S+:\d+:\s*/, "") : String(e));
    } finally {
      sink = undefined;
    }
  });
  chain = run.then(() => {}, () => {});
  return run;
}

let chain: Promise<void> = Promise.resolve();
