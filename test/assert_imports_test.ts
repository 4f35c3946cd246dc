/**
 * Every test imports the strict assertions under their short names. Deno 2.9's
 * `node:assert/strict` exports a loose `equal` and `deepEqual` (`equal(1, "1")` passes there,
 * unlike in Node), so a test written `equal(usage.prompt_tokens, "5")` or `deepEqual` over a
 * number that came back as a string could never fail. The tests therefore import
 * `strictEqual as equal`, `deepStrictEqual as deepEqual` (and the `not` forms); this test finds
 * any import of the loose names from `node:assert` or `node:assert/strict`.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";

const LOOSE = new Set(["equal", "notEqual", "deepEqual", "notDeepEqual"]);
const IMPORT = /import\s*\{([^}]*)\}\s*from\s*"node:assert(?:\/strict)?"/g;

/** The loose names `source` imports from node's assert modules. */
export function looseImports(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(IMPORT)) {
    for (const part of m[1]!.split(",")) {
      const name = part.trim().split(/\s+as\s+/)[0]!;
      if (LOOSE.has(name)) found.push(name);
    }
  }
  return found;
}

async function sources(dir: string, out: string[]): Promise<string[]> {
  for await (const e of Deno.readDir(dir)) {
    const path = `${dir}${e.name}`;
    if (e.isDirectory) {
      if (e.name !== "node_modules" && !e.name.startsWith(".")) await sources(`${path}/`, out);
    } else if (/\.(ts|mjs)$/.test(e.name)) out.push(path);
  }
  return out;
}

Deno.test("Deno's node:assert/strict equal and deepEqual are loose (why this test exists)", async () => {
  const strict = await import("node:assert/strict");
  // If a Deno release makes them strict, this fails and the rule below can go.
  let loose = 0;
  for (
    const f of [() => strict.equal(1 as unknown, "1"), () => strict.deepEqual({ a: 1 }, { a: "1" })]
  ) {
    try {
      f();
      loose++;
    } catch { /* strict */ }
  }
  strictEqual(loose, 2);
});

Deno.test("looseImports finds the loose names and only them", () => {
  // The module names are spliced in, so this file's own text holds no such import.
  const strict = "node:assert/strict", plain = "node:assert";
  deepStrictEqual(looseImports(`import { equal, ok } from "${strict}";`), ["equal"]);
  deepStrictEqual(
    looseImports(`import {\n  deepEqual,\n  notEqual,\n} from "${plain}";`),
    ["deepEqual", "notEqual"],
  );
  deepStrictEqual(
    looseImports(
      `import { deepStrictEqual as deepEqual, strictEqual as equal } from "${strict}";`,
    ),
    [],
  );
  deepStrictEqual(looseImports(`import { equal } from "./mine.ts";`), []);
});

Deno.test("no source or test imports a loose assertion", async () => {
  const offenders: string[] = [];
  for (
    const root of ["src/", "test/", "bench/", "tools/", "scripts/", "integrations/", "examples/"]
  ) {
    let files: string[] = [];
    try {
      files = await sources(root, []);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    for (const file of files) {
      const names = looseImports(await Deno.readTextFile(file));
      if (names.length > 0) offenders.push(`${file}: ${names.join(", ")}`);
    }
  }
  deepStrictEqual(offenders, []);
});
