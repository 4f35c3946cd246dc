import { deepStrictEqual, ok } from "node:assert/strict";

const root = new URL("../", import.meta.url);
const readJson = async (name: string) =>
  JSON.parse(await Deno.readTextFile(new URL(name, root))) as { exports?: Record<string, string> };

Deno.test("package.json and deno.json export the same entry points", async () => {
  const pkg = await readJson("package.json");
  const deno = await readJson("deno.json");
  ok(deno.exports && Object.keys(deno.exports).length > 0, "deno.json has exports");
  deepStrictEqual(pkg.exports, deno.exports);
});

Deno.test("every exported entry point exists and imports with named exports", async () => {
  const deno = await readJson("deno.json");
  for (const [name, path] of Object.entries(deno.exports ?? {})) {
    const mod = await import(new URL(path, root).href);
    ok(Object.keys(mod).length > 0, `${name} (${path}) exports nothing`);
  }
});
