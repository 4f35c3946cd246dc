import { deepStrictEqual, ok } from "node:assert/strict";
import { BUILD_EXPORTS, packageExports } from "../scripts/build_package.mjs";

const root = new URL("../", import.meta.url);
const readJson = async (name: string) =>
  JSON.parse(await Deno.readTextFile(new URL(name, root))) as { exports?: Record<string, string> };

Deno.test("package.json exports deno.json's entry points, built (types and import)", async () => {
  const pkg = await readJson("package.json");
  const deno = await readJson("deno.json");
  ok(deno.exports && Object.keys(deno.exports).length > 0, "deno.json has exports");
  deepStrictEqual(pkg.exports, packageExports(deno.exports));
});

Deno.test("the only exports deno.json lacks are the named build-only ones", async () => {
  const pkg = await readJson("package.json");
  const deno = await readJson("deno.json");
  const buildOnly = Object.keys(pkg.exports ?? {}).filter((n) => !Object.hasOwn(deno.exports!, n));
  deepStrictEqual(buildOnly, ["./browser"]);
  deepStrictEqual(Object.keys(BUILD_EXPORTS), ["./browser"]);
});

Deno.test("every exported entry point exists and imports with named exports", async () => {
  const deno = await readJson("deno.json");
  for (const [name, path] of Object.entries(deno.exports ?? {})) {
    const mod = await import(new URL(path, root).href);
    ok(Object.keys(mod).length > 0, `${name} (${path}) exports nothing`);
  }
});
