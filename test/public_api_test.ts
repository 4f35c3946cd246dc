/**
 * The public promise stays small: the stable entry points of `deno.json` (every export but
 * `./internal`) export at most `STABLE_BOUND` distinct names together, as `deno doc --json` reads
 * them, and none of them re-exports a module wholesale (`export *`, so a barrel's every new name
 * would become public unseen) or reaches into `src/internal.ts`. docs/api.md lists the entry
 * points. Two planted entries, one re-exporting the GPU barrel and one the internal entry, are
 * run through the same checks and must be rejected.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);
/**
 * The most distinct names the stable entry points may export together. The names an app calls
 * are few (`openModel`, the store, the model sources); the rest are the types their signatures
 * mention (OpenAI requests and answers, engine options, the contract), which `deno doc --lint`
 * requires to be exported beside them. Raise it only with a line in docs/api.md saying why.
 */
const STABLE_BOUND = 167;
/** The unstable entry point: namespaces of every folder barrel. */
const INTERNAL = "./internal";

interface DocSymbol {
  name: string;
  declarations: { declarationKind?: string; kind: string }[];
}

/** `deno.json`'s exports: entry name → path (relative to the repository root). */
async function exportsMap(): Promise<Record<string, string>> {
  const text = await Deno.readTextFile(new URL("deno.json", ROOT));
  return (JSON.parse(text) as { exports: Record<string, string> }).exports;
}

/** The names each module exports, read by `deno doc --json` (one run for all of them). */
async function exportedNames(paths: string[]): Promise<Map<string, string[]>> {
  const { success, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", ...paths],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  ok(success, new TextDecoder().decode(stderr));
  const doc = JSON.parse(new TextDecoder().decode(stdout)) as {
    nodes: Record<string, { symbols: DocSymbol[] }>;
  };
  const out = new Map<string, string[]>();
  for (const path of paths) {
    const node = doc.nodes[new URL(path, ROOT).href];
    ok(node, `deno doc read ${path}`);
    out.set(
      path,
      node.symbols
        .filter((s) => s.declarations.some((d) => d.declarationKind === "export"))
        .map((s) => s.name),
    );
  }
  return out;
}

/**
 * What is wrong with a stable entry's source: an `export *` (a wholesale re-export, named as a
 * namespace or not) or any import of `src/internal.ts`.
 */
function wholesale(source: string): string[] {
  const found: string[] = [];
  for (
    const m of source.matchAll(/export\s+(?:type\s+)?\*(?:\s+as\s+\w+)?\s+from\s+["']([^"']+)/g)
  ) {
    found.push(`export * from ${m[1]}`);
  }
  for (const m of source.matchAll(/from\s+["']([^"']*internal\.ts)["']/g)) {
    found.push(`imports ${m[1]}`);
  }
  return found;
}

/** The checks every stable entry set must pass: the problems found, none when it passes. */
async function checkStable(paths: string[]): Promise<{ count: number; problems: string[] }> {
  const names = await exportedNames(paths);
  const distinct = new Set([...names.values()].flat());
  const problems: string[] = [];
  if (distinct.size > STABLE_BOUND) {
    problems.push(`${distinct.size} distinct names, more than ${STABLE_BOUND}`);
  }
  for (const path of paths) {
    const source = await Deno.readTextFile(new URL(path, ROOT));
    for (const w of wholesale(source)) problems.push(`${path}: ${w}`);
    if ((names.get(path) ?? []).length === 0) problems.push(`${path} exports nothing`);
  }
  return { count: distinct.size, problems };
}

const exported = await exportsMap();
const stablePaths = Object.entries(exported).filter(([name]) => name !== INTERNAL).map(([, p]) =>
  p
);

Deno.test("deno.json has the stable entry points and one ./internal", () => {
  ok(Object.hasOwn(exported, INTERNAL), "./internal is exported");
  ok(Object.hasOwn(exported, "."), "the root entry is exported");
  strictEqual(Object.keys(exported).filter((n) => n.includes("internal")).length, 1);
});

Deno.test(`the stable entry points export at most ${STABLE_BOUND} distinct names, none wholesale`, async () => {
  const { count, problems } = await checkStable(stablePaths);
  deepStrictEqual(problems, []);
  ok(count > 50, `${count} names: the scan reads the entries' exports`);
});

Deno.test("./internal holds every folder barrel as a namespace, and is said to be unstable", async () => {
  const path = exported[INTERNAL]!;
  const source = await Deno.readTextFile(new URL(path, ROOT));
  ok(/UNSTABLE/.test(source.slice(0, source.indexOf("@module"))), "its module doc says UNSTABLE");
  const names = (await exportedNames([path])).get(path)!;
  for (const ns of ["gpu", "model", "runtime", "reference", "text", "openai", "worker"]) {
    ok(names.includes(ns), `./internal has the namespace ${ns}`);
  }
  deepStrictEqual(
    [...source.matchAll(/^export\s+(?!\*\s+as\s)/gm)].map((m) => m.index),
    [],
    "./internal exports namespaces only (no flat names to collide)",
  );
});

/** Write a planted entry under `.cache/` (inside the repository, so imports resolve). */
async function plant(name: string, lines: string[]): Promise<string> {
  const dir = new URL(".cache/public_api_test/", ROOT);
  await Deno.mkdir(dir, { recursive: true });
  const path = `.cache/public_api_test/${name}.ts`;
  await Deno.writeTextFile(
    new URL(path, ROOT),
    ["/**", ` * A planted stable entry (${name}).`, " * @module", " */", ...lines, ""].join("\n"),
  );
  return path;
}

Deno.test("planted error: a stable entry that adds `export * from` the GPU barrel is rejected", async () => {
  const mutant = await plant("gpu_barrel", [
    'export { openModel } from "../../src/mod.ts";',
    'export * from "../../src/gpu/mod.ts";',
  ]);
  const { count, problems } = await checkStable([...stablePaths, mutant]);
  ok(count > STABLE_BOUND, `${count} names with the GPU barrel: the bound catches it`);
  ok(problems.some((p) => p.includes("distinct names, more than")), problems.join("\n"));
  ok(problems.some((p) => p.includes("export * from ../../src/gpu/mod.ts")), problems.join("\n"));
});

Deno.test("planted error: a stable entry that re-exports ./internal wholesale is rejected", async () => {
  const mutant = await plant("internal_reexport", [
    'export * as kiln from "../../src/internal.ts";',
  ]);
  const { problems } = await checkStable([...stablePaths, mutant]);
  deepStrictEqual(problems.filter((p) => p.startsWith(mutant)), [
    `${mutant}: export * from ../../src/internal.ts`,
    `${mutant}: imports ../../src/internal.ts`,
  ]);
});
