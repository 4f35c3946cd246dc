import { deepStrictEqual, ok } from "node:assert/strict";

const root = new URL("../", import.meta.url);
const readJson = async (name: string) =>
  JSON.parse(await Deno.readTextFile(new URL(name, root))) as {
    imports?: Record<string, string>;
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
    peerDependencies?: Record<string, string>;
  };

/** package.json dependencies that only the npm build's `.d.ts` files use. */
const TYPES_ONLY = ["@webgpu/types"];

/**
 * `npm:name@range` (name possibly scoped) as `[name, range]`, and the subpath form
 * `npm:/name@range/` (mapped from `name/`) as `[name/, range]`; undefined for other targets.
 */
function npmTarget(target: string): [string, string] | undefined {
  const m = /^npm:(@?[^@/]+(?:\/[^@/]+)?)@([^/]+)$/.exec(target) ??
    /^npm:\/(@?[^@/]+(?:\/[^@/]+)?)@([^/]+)\/$/.exec(target);
  if (!m) return undefined;
  return [target.startsWith("npm:/") ? `${m[1]}/` : m[1]!, m[2]!];
}

Deno.test("npmTarget reads the plain and the subpath forms", () => {
  deepStrictEqual(npmTarget("npm:comlink@^4.4.2"), ["comlink", "^4.4.2"]);
  deepStrictEqual(npmTarget("npm:@huggingface/gguf@^0.4.6"), ["@huggingface/gguf", "^0.4.6"]);
  deepStrictEqual(npmTarget("npm:/onnxruntime-web@^1.23.0/"), ["onnxruntime-web/", "^1.23.0"]);
  deepStrictEqual(npmTarget("jsr:@std/assert@1"), undefined);
});

Deno.test("deno.json's imports name package.json's dependencies at the same versions", async () => {
  const pkg = await readJson("package.json");
  const deno = await readJson("deno.json");
  // A runtime or peer dependency's range is the one the published package declares.
  const npm = { ...pkg.devDependencies, ...pkg.peerDependencies, ...pkg.dependencies };
  for (const [specifier, target] of Object.entries(deno.imports ?? {})) {
    const parsed = npmTarget(target);
    ok(parsed, `deno.json imports ${specifier}: ${target} is not an npm:name@range specifier`);
    const [name, range] = parsed;
    deepStrictEqual(name, specifier, `deno.json maps ${specifier} to another package (${name})`);
    const bare = name.replace(/\/$/, "");
    deepStrictEqual(range, npm[bare], `${name}: deno.json has ${range}, package.json ${npm[bare]}`);
  }
  // What the published modules import must resolve without package.json: every runtime and peer
  // dependency needs an entry, and its subpath form (`name/`) too where the sources import a
  // subpath (onnxruntime-web/webgpu).
  // @webgpu/types is exempt: no source imports it (Deno has WebGPU's types built in); only the
  // npm build's .d.ts files reference it.
  const peers = Object.keys(pkg.peerDependencies ?? {});
  const runtime = Object.keys(pkg.dependencies ?? {}).filter((n) => !TYPES_ONLY.includes(n));
  for (const name of [...runtime, ...peers]) {
    ok(deno.imports?.[name], `package.json dependency ${name} is missing from deno.json imports`);
  }
  for (const name of peers) {
    ok(deno.imports?.[`${name}/`], `peer dependency ${name}: deno.json imports lacks ${name}/`);
  }
  // A peer's range must agree wherever package.json names it (devDependencies install it here).
  for (const [name, range] of Object.entries(pkg.peerDependencies ?? {})) {
    const dev = pkg.devDependencies?.[name];
    ok(dev === undefined || dev === range, `${name}: peer ${range}, devDependency ${dev}`);
  }
});

Deno.test("the publish list ships src/ and shaders/, not tests or local data", async () => {
  const deno = JSON.parse(await Deno.readTextFile(new URL("deno.json", root))) as {
    publish?: { include?: string[]; exclude?: string[] };
  };
  const include = deno.publish?.include ?? [];
  for (const dir of ["src/", "shaders/", "README.md"]) ok(include.includes(dir), `includes ${dir}`);
  for (const dir of ["test/", "bench/", "tools/", "demo/", "models/", "node_modules/", ".cache/"]) {
    ok(!include.some((p) => p.startsWith(dir)), `does not include ${dir}`);
  }
  ok(deno.publish?.exclude?.includes("src/**/*_test.ts"), "excludes tests under src/");
});
