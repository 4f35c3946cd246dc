// deno-lint-ignore-file explicit-module-boundary-types
// `npm run build` (and `npm pack`, through `prepack`): the npm package's contents in dist/pkg/.
//
// - Every entry of deno.json's `exports` (read here, so a new export needs no change to this
//   script) and Kiln's browser worker module are compiled by TypeScript's `tsc` to ES modules
//   plus `.d.ts`, with `.ts` import specifiers rewritten to `.js` (`rewriteRelativeImportExtensions`).
// - `new URL("./x.ts", import.meta.url)` literals (the worker) get `.js` too, so bundlers that
//   follow `new Worker(new URL(...))` find the emitted file.
// - `gpu/shader_text.js`, which fetches `shaders/<path>` in the sources, is replaced by a module
//   holding the text of every file under `shaders/` (kernels, `product/`, `lib/` and `formats/` fragments, WGSL
//   less its comments; `tables/` data): no shader file has to be located at run time.
// - WebGPU types: TypeScript 6 and later declare WebGPU in their DOM lib, which collides with
//   `@webgpu/types` ("Duplicate identifier" under `skipLibCheck: false`); TypeScript 5 has none. So
//   each export's types are two files: `x.d.ts` (no reference), chosen by TypeScript 6+ through
//   the versioned condition `types@>=6`, and `x.ts5.d.ts`, chosen by the plain `types` condition
//   (older TypeScript, other tools), which re-exports `x.d.ts` and, where its `.d.ts` files name
//   WebGPU types, references `@webgpu/types` (a dependency of the package).
// - `formats/gguf/lib.js` gets `@huggingface/gguf` bundled in, free of `@huggingface/tasks`'s tables
//   (scripts/build_vendor.mjs), so apps' bundlers do not keep them.
// - `dist/pkg/browser/`: the self-contained build for pages without a bundler, bundled from the
//   compiled modules by scripts/build_browser.mjs (the package export `./browser`).
//
// package.json's `exports` must be what `packageExports()` derives from deno.json plus the
// build-only `BUILD_EXPORTS`; the build fails otherwise, and
// `node scripts/build_package.mjs --write-exports` rewrites them.
// `tsc` is `node_modules/.bin/tsc` (the `typescript` devDependency) unless `KILN_TSC` names one.
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
export const OUT_DIR = "dist/pkg";
/** Modules loaded by URL rather than imported: compiled too, never exported. */
const URL_ENTRIES = [
  "./src/adapters/browser/worker.ts",
  "./src/adapters/browser/shared_worker.ts",
  "./src/adapters/browser/service_worker.ts",
  "./src/engines/guided/grammar_worker.ts",
];

const readJson = (name) => JSON.parse(readFileSync(join(ROOT, name), "utf8"));

/** TypeScript versions whose DOM lib declares WebGPU (checked: 6.0.3 and 7.0.2 do, 5.9.3 not). */
export const TYPES_WITH_WEBGPU = "types@>=6";

/**
 * An export's conditions for the built module `<base>.js`: its types `<base>.d.ts` for TypeScript
 * with WebGPU in its DOM lib, else `<base>.ts5.d.ts` (see `legacyTypes`).
 */
function entryPoint(base) {
  return { [TYPES_WITH_WEBGPU]: `${base}.d.ts`, types: `${base}.ts5.d.ts`, import: `${base}.js` };
}

/**
 * Exports of the npm package that deno.json cannot have, because they are build artifacts: the
 * self-contained browser build (scripts/build_browser.mjs).
 */
export const BUILD_EXPORTS = { "./browser": entryPoint(`./${OUT_DIR}/browser/kiln`) };

/**
 * package.json's `exports`: deno.json's (`./src/x/mod.ts` gives `./dist/pkg/x/mod.js` and its
 * types, see `entryPoint`), then `BUILD_EXPORTS`.
 */
export function packageExports(denoExports) {
  const out = {};
  for (const [name, path] of Object.entries(denoExports)) {
    const m = /^\.\/src\/(.+)\.ts$/.exec(path);
    if (!m) throw new Error(`deno.json export ${name}: ${path} is not a .ts file under src/`);
    out[name] = entryPoint(`./${OUT_DIR}/${m[1]}`);
  }
  for (const [name, entry] of Object.entries(BUILD_EXPORTS)) {
    if (Object.hasOwn(out, name)) throw new Error(`export ${name}: in deno.json and built too`);
    out[name] = entry;
  }
  return out;
}

function* walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* walk(path);
    else yield path;
  }
}

function tscPath() {
  const tsc = process.env.KILN_TSC ?? join(ROOT, "node_modules/.bin/tsc");
  if (!existsSync(tsc)) {
    throw new Error(
      `${tsc} not found: run npm install (typescript is a devDependency) or set KILN_TSC`,
    );
  }
  return tsc;
}

function compile(entries, outDir) {
  const config = join(ROOT, "dist/pkg.tsconfig.json");
  writeFileSync(
    config,
    JSON.stringify(
      {
        compilerOptions: {
          target: "ES2022",
          module: "ESNext",
          moduleResolution: "bundler",
          lib: ["ES2023", "DOM", "DOM.Iterable", "DOM.AsyncIterable"],
          types: ["@webgpu/types"],
          strict: true,
          exactOptionalPropertyTypes: true,
          noUncheckedIndexedAccess: true,
          noImplicitOverride: true,
          declaration: true,
          rewriteRelativeImportExtensions: true,
          skipLibCheck: true,
          noEmitOnError: true,
          newLine: "lf",
          rootDir: join(ROOT, "src"),
          outDir,
        },
        files: entries.map((e) => join(ROOT, e)),
      },
      null,
      2,
    ),
  );
  execFileSync(tscPath(), ["-p", config], { cwd: ROOT, stdio: "inherit" });
}

/** Files under shaders/ that the package inlines: WGSL kernels and fragments, table data. */
const SHADER_FILE = /\.(wgsl|json)$/;

/**
 * WGSL without its comments and blank lines, as the package inlines it (about 30% of the text; the
 * sources keep them). Composer directives (`//! import ...`) stay. WGSL has no string literals,
 * so every `//` outside a directive starts a comment; `/* *\/` comments are not used in shaders/.
 */
export function stripWgslComments(text) {
  return text.split("\n")
    .map((line) => /^\s*\/\/!/.test(line) ? line : line.replace(/\s*\/\/.*$/, ""))
    .filter((line) => line.trim() !== "")
    .join("\n") + "\n";
}

/** A file under shaders/ as the package holds it: WGSL less comments, JSON re-serialised compactly. */
function shaderFileText(path) {
  const text = readFileSync(path, "utf8");
  return path.endsWith(".wgsl") ? stripWgslComments(text) : JSON.stringify(JSON.parse(text));
}

/**
 * The module that replaces `gpu/shader_text.js`: every file under `shaders/` (kernels, the
 * fragments in `product/`, `lib/` and `formats/`, the lookup tables in `tables/`) by its path there.
 */
export function shaderModule(dir = join(ROOT, "shaders")) {
  const paths = [...walk(dir)]
    .map((p) => relative(dir, p).split(sep).join("/"))
    .filter((p) => SHADER_FILE.test(p))
    .sort();
  const entries = paths.map((p) =>
    `  ${JSON.stringify(p)}: ${JSON.stringify(shaderFileText(join(dir, p)))},`
  );
  return [
    "// Generated by scripts/build_package.mjs from shaders/: the text of each file by its path.",
    "const FILES = {",
    ...entries,
    "};",
    "/** The text of `shaders/<path>`. */",
    "export async function loadShaderFile(path) {",
    "  if (!Object.hasOwn(FILES, path)) throw new Error(`shaders/${path}: not in this build`);",
    "  return FILES[path];",
    "}",
    "",
  ].join("\n");
}

const URL_TS = /new URL\((["'])(\.{1,2}\/[^"']*)\.ts\1, import\.meta\.url\)/g;
const TS_IMPORT = /(?:from|import)\s*\(?\s*["']\.{1,2}\/[^"']*\.ts["']/;
/** Relative `.ts` specifiers that `.d.ts` files keep: `.js`, as every module resolution reads. */
const DTS_TS = /((?:from|import)\s*\(?\s*)(["'])(\.{1,2}\/[^"']*)\.ts\2/g;
/** Relative modules a `.d.ts` imports or re-exports (after `DTS_TS`). */
const DTS_IMPORT = /(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']*)\.js["']/g;
const WEBGPU_NAME = /\bGPU[A-Z]\w*/;

/** Whether the `.d.ts` file `dts`, or one it reaches through relative imports, names WebGPU. */
function reachesWebGpu(dts, seen = new Set()) {
  if (seen.has(dts)) return false;
  seen.add(dts);
  const text = readFileSync(dts, "utf8");
  if (WEBGPU_NAME.test(text)) return true;
  for (const [, path] of text.matchAll(DTS_IMPORT)) {
    if (reachesWebGpu(join(dirname(dts), `${path}.d.ts`), seen)) return true;
  }
  return false;
}

/**
 * Each export's `types` file for TypeScript without WebGPU in its DOM lib: the `.d.ts` that
 * TypeScript 6+ reads, re-exported, plus `@webgpu/types` where that reaches WebGPU names.
 */
function legacyTypes(exports) {
  for (const entry of Object.values(exports)) {
    const dts = entry[TYPES_WITH_WEBGPU];
    const base = dts.split("/").pop();
    const module = `./${base.replace(/\.d\.ts$/, ".js")}`;
    const lines = [
      `// The types of ${module} for TypeScript without WebGPU in its DOM lib (before 6); the`,
      `// package's exports give TypeScript 6+ ${base} itself (condition "${TYPES_WITH_WEBGPU}").`,
    ];
    if (reachesWebGpu(join(ROOT, dts))) lines.push('/// <reference types="@webgpu/types" />');
    lines.push(`export * from ${JSON.stringify(module)};`, "");
    writeFileSync(join(ROOT, entry.types), lines.join("\n"));
  }
}

function postProcess(outDir) {
  writeFileSync(join(outDir, "gpu/shader_text.js"), shaderModule());
  for (const file of walk(outDir)) {
    let text = readFileSync(file, "utf8");
    if (file.endsWith(".js")) {
      text = text.replace(URL_TS, (_, q, path) => `new URL(${q}${path}.js${q}, import.meta.url)`);
    } else if (file.endsWith(".d.ts")) {
      text = text.replace(DTS_TS, (_, lead, q, path) => `${lead}${q}${path}.js${q}`);
    }
    const bad = TS_IMPORT.exec(text);
    if (bad) throw new Error(`${relative(ROOT, file)}: a .ts specifier survived: ${bad[0]}`);
    writeFileSync(file, text);
  }
}

function checkExports(write) {
  const pkg = readJson("package.json");
  const want = packageExports(readJson("deno.json").exports);
  if (JSON.stringify(pkg.exports) === JSON.stringify(want)) return;
  if (!write) {
    throw new Error(
      "package.json's exports do not match deno.json's plus BUILD_EXPORTS: run node scripts/build_package.mjs --write-exports",
    );
  }
  pkg.exports = want;
  writeFileSync(join(ROOT, "package.json"), `${JSON.stringify(pkg, null, 2)}\n`);
  console.log("package.json: exports rewritten from deno.json");
}

/** Build dist/pkg/ (the browser build's file sizes are logged); returns its path. */
export async function buildPackage({ writeExports = false } = {}) {
  checkExports(writeExports);
  const denoExports = readJson("deno.json").exports;
  const entries = [...Object.values(denoExports), ...URL_ENTRIES];
  const outDir = join(ROOT, OUT_DIR);
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(dirname(outDir), { recursive: true });
  compile(entries, outDir);
  postProcess(outDir);
  // Imported here, not at the top: test/exports_test.ts imports this module under Deno.
  const { vendorGguf } = await import("./build_vendor.mjs");
  await vendorGguf(outDir);
  const { buildBrowser } = await import("./build_browser.mjs");
  const sizes = await buildBrowser(outDir);
  legacyTypes(readJson("package.json").exports);
  for (const [file, size] of Object.entries(sizes)) {
    console.log(`${relative(ROOT, outDir)}/browser/${file}: ${(size / 1024).toFixed(0)} KiB`);
  }
  return outDir;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { runFlags } = await import("./flags.mjs");
  const flags = runFlags({
    name: "build",
    command: "npm run build --",
    about: "Compile the npm package into dist/pkg/ (ES modules, .d.ts, the browser build).",
    flags: {
      "write-exports": {
        type: "boolean",
        help: "also write package.json's exports map from deno.json's",
      },
    },
  });
  const t0 = performance.now();
  const out = await buildPackage({ writeExports: flags["write-exports"] === true });
  console.log(`built ${relative(ROOT, out)}/ in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}
