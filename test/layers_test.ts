/**
 * Which of `src/`'s modules and folders import which, read from the source (every `import`,
 * `import type`, `export ... from` and `import()` of a relative path, tests left out): no import
 * cycle between files, no loop between folders (`src/mod.ts` a node of its own), no published
 * file importing outside `src/` (`test/`, `tools/`, `bench/` are not published); the OpenAI layer
 * (`src/openai/`) knows neither HTTP nor workers, and `src/worker/` does not import `src/server/`.
 * Each check is also run on a planted graph with the fault in it, and must find it.
 */
import { deepStrictEqual, ok } from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);
const SRC = new URL("src/", ROOT);

/** Module path (repo-relative, `src/...`) → its text. */
type Sources = Map<string, string>;
/** Node → the nodes it imports. */
type Graph = Map<string, Set<string>>;

/** Every non-test `.ts` module under `src/` (`_test.ts` files left out), by repo-relative path. */
async function srcSources(): Promise<Sources> {
  const out: Sources = new Map();
  const walk = async (dir: URL): Promise<void> => {
    for await (const entry of Deno.readDir(dir)) {
      const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
      if (entry.isDirectory) await walk(url);
      else if (entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts")) {
        out.set(url.href.slice(ROOT.href.length), await Deno.readTextFile(url));
      }
    }
  };
  await walk(SRC);
  return out;
}

/** The relative specifiers `text` imports: `import`, `import type`, `export ... from`, `import()`. */
function importsOf(text: string): string[] {
  const found = text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g);
  return [...found].map((m) => m[1]!);
}

/** Module → the repo-relative paths it imports (inside `src/` or not). */
function fileGraph(sources: Sources): Graph {
  const graph: Graph = new Map();
  for (const [path, text] of sources) {
    const base = new URL(path, "file:///");
    graph.set(path, new Set(importsOf(text).map((s) => new URL(s, base).pathname.slice(1))));
  }
  return graph;
}

/** The folder a `src/` module lives in: its first segment under `src/` (`mod.ts` for `src/mod.ts`). */
const folderOf = (path: string) => path.slice("src/".length).split("/")[0]!;

/** Folder → the other folders its modules import (imports leaving `src/` left out). */
function folderGraph(files: Graph): Graph {
  const graph: Graph = new Map();
  for (const [from, targets] of files) {
    const set = graph.get(folderOf(from)) ??
      graph.set(folderOf(from), new Set()).get(folderOf(from))!;
    for (const to of targets) {
      if (to.startsWith("src/") && folderOf(to) !== folderOf(from)) set.add(folderOf(to));
    }
  }
  return graph;
}

/** The cycles of `graph`: each strongly connected set of more than one node, sorted (Tarjan). */
function cycles(graph: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>(), low = new Map<string, number>();
  const stack: string[] = [], onStack = new Set<string>(), found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || graph.get(v)!.has(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** Whether `path` is published (`deno.json`'s publish list leaves out `_test.ts` and `test_*.ts`). */
const published = (path: string) => !/(?:_test|\/test_[^/]*)\.ts$/.test(path);

/** `from -> to` for every import of a published module that leaves `src/`. */
function importsOutsideSrc(files: Graph): string[] {
  return [...files].filter(([from]) => published(from)).flatMap(([from, targets]) =>
    [...targets].filter((to) => !to.startsWith("src/")).map((to) => `${from} -> ${to}`)
  );
}

/** The folders from which `start` is reached again (a cycle through it), each path once. */
function cyclesThrough(edges: Graph, start: string): string[][] {
  const found: string[][] = [];
  const visit = (at: string, path: string[]) => {
    for (const next of edges.get(at) ?? []) {
      if (next === start) found.push([...path, next]);
      else if (!path.includes(next)) visit(next, [...path, next]);
    }
  };
  visit(start, [start]);
  return found;
}

const files = fileGraph(await srcSources());
const edges = folderGraph(files);

Deno.test("the scan sees the imports it checks (server uses openai and worker, worker uses openai)", () => {
  ok(edges.get("server")?.has("openai"), "server imports openai");
  ok(edges.get("server")?.has("worker"), "server imports worker (the supervisor's WorkerEngine)");
  ok(edges.get("worker")?.has("openai"), "worker imports openai (openModel's helpers)");
});

Deno.test("the file scan sees type-only imports, export-from and import() in src/", () => {
  ok(files.size > 300, `${files.size} modules`);
  const has = (from: string, to: string) => ok(files.get(from)?.has(to), `${from} -> ${to}`);
  has("src/adapters/deno/flags_usage.ts", "src/adapters/deno/flag_types.ts"); // import type
  has("src/contract/mod.ts", "src/contract/types.ts"); // export * from
  has("src/worker/host_engines.ts", "src/engines/ort/mod.ts"); // await import()
  ok(edges.has("mod.ts") && edges.get("mod.ts")!.has("contract"), "src/mod.ts is a node");
});

Deno.test("src/openai imports neither src/server nor src/worker; src/worker does not import src/server", () => {
  deepStrictEqual(
    [...edges.get("openai") ?? []].filter((f) => f === "server" || f === "worker"),
    [],
  );
  deepStrictEqual([...edges.get("worker") ?? []].filter((f) => f === "server"), []);
});

Deno.test("no import cycle between folders runs through server, worker or openai", () => {
  for (const folder of ["server", "worker", "openai"]) {
    deepStrictEqual(cyclesThrough(edges, folder), [], folder);
  }
});

Deno.test("the cycle finder finds a cycle when there is one", () => {
  const looped = new Map([["a", new Set(["b"])], ["b", new Set(["c"])], ["c", new Set(["a"])]]);
  deepStrictEqual(cyclesThrough(looped, "a"), [["a", "b", "c", "a"]]);
});

Deno.test("no file-level import cycle in src/ (type-only imports, export-from and import() included)", () => {
  deepStrictEqual(cycles(files), []);
});

Deno.test("no two src/ folders import each other, nor any longer loop (src/mod.ts its own node)", () => {
  deepStrictEqual(cycles(edges), []);
});

Deno.test("no published file under src/ imports outside src/ (test/, tools/, bench/)", () => {
  deepStrictEqual(importsOutsideSrc(files), []);
});

Deno.test("planted: file cycles closed by one import type, one export-from, one import() are found", () => {
  const planted: Sources = new Map([
    ["src/p/a.ts", 'import type { B } from "./b.ts";\nexport type A = B;'],
    ["src/p/b.ts", 'import { a } from "./a.ts";'],
    ["src/p/c.ts", 'export { d } from "./d.ts";'],
    ["src/p/d.ts", 'import { c } from "./c.ts";'],
    ["src/p/e.ts", 'const f = await import("./f.ts");'],
    ["src/p/f.ts", 'import "./e.ts";'],
    ["src/p/g.ts", 'import { a } from "./a.ts";\nimport type { F } from "../p/f.ts";'],
  ]);
  deepStrictEqual(cycles(fileGraph(planted)), [
    ["src/p/a.ts", "src/p/b.ts"],
    ["src/p/c.ts", "src/p/d.ts"],
    ["src/p/e.ts", "src/p/f.ts"],
  ]);
});

Deno.test("planted: a loop between two folders with no file cycle, and one through src/mod.ts", () => {
  const planted: Sources = new Map([
    ["src/x/a.ts", 'import type { B } from "../y/b.ts";'],
    ["src/y/b.ts", "export type B = number;"],
    ["src/y/c.ts", 'export { d } from "../x/d.ts";'],
    ["src/x/d.ts", "export const d = 1;"],
    ["src/mod.ts", 'export * from "./z/e.ts";'],
    ["src/z/e.ts", 'import type { M } from "../mod.ts";'],
  ]);
  const plantedFiles = fileGraph(planted);
  deepStrictEqual(cycles(plantedFiles), [["src/mod.ts", "src/z/e.ts"]]);
  deepStrictEqual(cycles(folderGraph(plantedFiles)), [["mod.ts", "z"], ["x", "y"]]);
});

Deno.test("planted: a published module's import() of test/ is found; a test module's is not", () => {
  const planted: Sources = new Map([
    ["src/q/a.ts", 'const m = await import("../../test/support/fixture.ts");'],
    ["src/q/test_b.ts", 'import { f } from "../../test/support/fixture.ts";'],
    ["src/q/c.ts", 'import { x } from "../r/x.ts";'],
  ]);
  deepStrictEqual(importsOutsideSrc(fileGraph(planted)), [
    "src/q/a.ts -> test/support/fixture.ts",
  ]);
});

Deno.test("the ONNX Runtime engine shares src/engines/'s modules, not WebGpuEngine's", async () => {
  const ort = new URL("engines/ort/", SRC);
  const imports: string[] = [];
  for await (const e of Deno.readDir(ort)) {
    if (!e.name.endsWith(".ts") || e.name.endsWith("_test.ts")) continue;
    const text = await Deno.readTextFile(new URL(e.name, ort));
    for (const m of text.matchAll(/(?:from|import\()\s*"(\.[^"]+)"/g)) imports.push(m[1]!);
  }
  ok(imports.some((p) => p === "../sequence.ts"), "ort imports the shared sequence");
  deepStrictEqual(imports.filter((p) => p.startsWith("../webgpu/")), []);
});
