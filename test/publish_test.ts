import { deepStrictEqual, ok } from "node:assert/strict";

const root = new URL("../", import.meta.url);
const readJson = async (name: string) =>
  JSON.parse(await Deno.readTextFile(new URL(name, root))) as {
    imports?: Record<string, string>;
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };

/** `npm:name@range` (name possibly scoped) as `[name, range]`; undefined for other targets. */
function npmTarget(target: string): [string, string] | undefined {
  const m = /^npm:(@?[^@]+)@(.+)$/.exec(target);
  return m ? [m[1]!, m[2]!] : undefined;
}

Deno.test("deno.json's imports name package.json's dependencies at the same versions", async () => {
  const pkg = await readJson("package.json");
  const deno = await readJson("deno.json");
  const npm = { ...pkg.devDependencies, ...pkg.dependencies };
  for (const [specifier, target] of Object.entries(deno.imports ?? {})) {
    const parsed = npmTarget(target);
    ok(parsed, `deno.json imports ${specifier}: ${target} is not an npm:name@range specifier`);
    const [name, range] = parsed;
    deepStrictEqual(name, specifier, `deno.json maps ${specifier} to another package (${name})`);
    deepStrictEqual(range, npm[name], `${name}: deno.json has ${range}, package.json ${npm[name]}`);
  }
  // What the published modules import must resolve without package.json: every runtime
  // dependency needs an entry.
  for (const name of Object.keys(pkg.dependencies ?? {})) {
    ok(deno.imports?.[name], `package.json dependency ${name} is missing from deno.json imports`);
  }
});

Deno.test("the publish list ships src/ and shaders/, not tests or local data", async () => {
  const deno = JSON.parse(await Deno.readTextFile(new URL("deno.json", root))) as {
    publish?: { include?: string[]; exclude?: string[] };
  };
  const include = deno.publish?.include ?? [];
  for (const dir of ["src/", "shaders/", "README.md"]) ok(include.includes(dir), `includes ${dir}`);
  for (const dir of ["test/", "bench/", "demo/", "models/", "node_modules/", ".cache/"]) {
    ok(!include.some((p) => p.startsWith(dir)), `does not include ${dir}`);
  }
  ok(deno.publish?.exclude?.includes("src/**/*_test.ts"), "excludes tests under src/");
});
