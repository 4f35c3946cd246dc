/**
 * Which of `src/`'s folders import which, read from the source (every `import`, `export ... from`
 * and `import()` of a relative path, tests left out): the OpenAI layer (`src/openai/`) knows
 * neither HTTP nor workers, `src/worker/` does not import `src/server/`, and none of the three
 * sits on an import cycle between folders.
 */
import { deepStrictEqual, ok } from "node:assert/strict";

const SRC = new URL("../src/", import.meta.url);

/** Folder (first path segment under `src/`) → the folders its non-test modules import. */
async function folderImports(): Promise<Map<string, Set<string>>> {
  const edges = new Map<string, Set<string>>();
  const folderOf = (url: URL) => url.href.slice(SRC.href.length).split("/")[0]!;
  const walk = async (dir: URL): Promise<void> => {
    for await (const entry of Deno.readDir(dir)) {
      const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
      if (entry.isDirectory) await walk(url);
      else if (entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts")) {
        const from = folderOf(url);
        const source = await Deno.readTextFile(url);
        for (const m of source.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
          const target = new URL(m[1]!, url);
          if (!target.href.startsWith(SRC.href)) continue;
          const to = folderOf(target);
          if (to !== from) (edges.get(from) ?? edges.set(from, new Set()).get(from)!).add(to);
        }
      }
    }
  };
  await walk(SRC);
  return edges;
}

/** The folders from which `start` is reached again (a cycle through it), each path once. */
function cyclesThrough(edges: Map<string, Set<string>>, start: string): string[][] {
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

const edges = await folderImports();

Deno.test("the scan sees the imports it checks (server uses openai and worker, worker uses openai)", () => {
  ok(edges.get("server")?.has("openai"), "server imports openai");
  ok(edges.get("server")?.has("worker"), "server imports worker (the supervisor's WorkerEngine)");
  ok(edges.get("worker")?.has("openai"), "worker imports openai (openModel's helpers)");
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
