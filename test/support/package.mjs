// deno-lint-ignore-file explicit-module-boundary-types
// Test support (Node): pack Kiln as npm would publish it, and install the tarball into a
// temporary copy of an example app, offline. The install goes through a lockfile written from
// the repository's own (the tarball's dependencies are the repository's runtime dependencies, at
// the versions `npm install` put in the npm cache), so `npm ci --offline` needs no registry.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The embedded fortune model's files a page loads (the optional ones too: no 404s). */
export const FORTUNE_FILES = [
  "config.json",
  "tokenizer.json",
  "tokenizer_config.json",
  "generation_config.json",
  "model.safetensors",
];
const readJson = (path) => JSON.parse(readFileSync(path, "utf8"));

/** `npm pack` (its `prepack` builds dist/pkg/) into a new temporary folder; the tarball's path. */
export function packKiln() {
  const dir = mkdtempSync(join(tmpdir(), "kiln-pack-"));
  const out = execFileSync("npm", ["pack", "--json", "--pack-destination", dir], {
    cwd: ROOT,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  const [{ filename }] = JSON.parse(out.slice(out.indexOf("[")));
  return join(dir, filename);
}

/**
 * Copy `examples/<name>/` to a temporary folder and install the tarball `tgz` there as its
 * `@kiln/kiln`, offline. Its devDependencies are linked from the repository's node_modules
 * (`vite`), not installed. Returns the folder.
 */
export function installExample(name, tgz) {
  const dir = join(mkdtempSync(join(tmpdir(), `kiln-${name}-`)), name);
  cpSync(join(ROOT, "examples", name), dir, { recursive: true });
  const app = readJson(join(dir, "package.json"));
  const dev = Object.keys(app.devDependencies ?? {});
  delete app.devDependencies;
  app.dependencies = { ...app.dependencies, "@kiln/kiln": `file:${tgz}` };
  writeFileSync(join(dir, "package.json"), JSON.stringify(app, null, 2));

  const pkg = readJson(join(ROOT, "package.json"));
  const packages = {
    "": { name: app.name, dependencies: app.dependencies },
    "node_modules/@kiln/kiln": {
      version: pkg.version,
      resolved: `file:${tgz}`,
      integrity: `sha512-${createHash("sha512").update(readFileSync(tgz)).digest("base64")}`,
      license: pkg.license,
      dependencies: pkg.dependencies,
      peerDependencies: pkg.peerDependencies,
      peerDependenciesMeta: pkg.peerDependenciesMeta,
    },
  };
  // The repository's runtime dependency tree, as npm resolved it (dev-only entries left out).
  for (const [path, entry] of Object.entries(readJson(join(ROOT, "package-lock.json")).packages)) {
    if (path !== "" && !entry.dev && !entry.devOptional) packages[path] = entry;
  }
  writeFileSync(
    join(dir, "package-lock.json"),
    JSON.stringify({ name: app.name, lockfileVersion: 3, requires: true, packages }, null, 2),
  );
  execFileSync("npm", ["ci", "--offline", "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd: dir,
    stdio: "inherit",
  });
  mkdirSync(join(dir, "node_modules"), { recursive: true });
  for (const d of dev) symlinkSync(join(ROOT, "node_modules", d), join(dir, "node_modules", d));
  return dir;
}
