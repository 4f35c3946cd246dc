// The packed npm package, outside the repository: its exports are deno.json's entry points,
// built (`types` and `import` files present in the tarball), every one resolves through the
// package's exports map and imports (under Deno, which has WebGPU's globals), and the Deno
// example (examples/deno/) type checks against the package's .d.ts and streams a completion.
import { before, test } from "node:test";
import assert, { ok } from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { packageExports } from "../../scripts/build_package.mjs";
import { installExample, packKiln, ROOT } from "../support/package.mjs";

const DENO = join(ROOT, "node_modules/.bin/deno");
const readJson = (path) => JSON.parse(readFileSync(path, "utf8"));
let dir, pkg;

before(() => {
  dir = installExample("deno", packKiln());
  pkg = readJson(join(dir, "node_modules/@kiln/kiln/package.json"));
}, { timeout: 120_000 });

const specifier = (name) => (name === "." ? "@kiln/kiln" : `@kiln/kiln/${name.slice(2)}`);

test("the tarball's exports are deno.json's entry points, built, and nothing else ships", () => {
  const denoExports = readJson(join(ROOT, "deno.json")).exports;
  assert.deepEqual(pkg.exports, packageExports(denoExports));
  for (const entry of Object.values(pkg.exports)) {
    for (const file of [entry.types, entry.import]) {
      ok(existsSync(join(dir, "node_modules/@kiln/kiln", file)), `${file} is in the tarball`);
    }
  }
  assert.deepEqual(pkg.files, ["dist/pkg/"]);
  const shipped = readdirSync(join(dir, "node_modules/@kiln/kiln"), { recursive: true })
    .filter((f) => statSync(join(dir, "node_modules/@kiln/kiln", f)).isFile());
  const stray = shipped.filter((f) =>
    !f.startsWith("dist/pkg/") && f !== "package.json" && f !== "README.md"
  );
  assert.deepEqual(stray, []);
  ok(shipped.includes("dist/pkg/adapters/browser/worker.js"), "the worker module ships");
  assert.equal(pkg.private, undefined);
  ok(pkg.dependencies["@webgpu/types"], "@webgpu/types is a dependency (the .d.ts reference it)");
  for (const dev of ["deno", "vite", "typescript", "playwright-core", "onnxruntime-web"]) {
    assert.equal(pkg.dependencies[dev], undefined, `${dev} is not a runtime dependency`);
  }
  assert.equal(pkg.peerDependenciesMeta?.["onnxruntime-web"]?.optional, true);
});

test("every export resolves in Node through the exports map, to the built file", () => {
  const script = join(dir, "resolve.mjs");
  writeFileSync(
    script,
    "const names = JSON.parse(process.argv[2]);\n" +
      "console.log(JSON.stringify(names.map((n) => import.meta.resolve(n))));\n",
  );
  const names = Object.keys(pkg.exports);
  const out = execFileSync("node", [script, JSON.stringify(names.map(specifier))], {
    cwd: dir,
    encoding: "utf8",
  });
  const resolved = JSON.parse(out).map((u) => fileURLToPath(u));
  names.forEach((name, i) => {
    assert.equal(resolved[i], join(dir, "node_modules/@kiln/kiln", pkg.exports[name].import));
  });
});

test("every export imports under Deno and has named exports", () => {
  const script = join(dir, "imports.mjs");
  writeFileSync(
    script,
    "const out = {};\n" +
      "for (const s of JSON.parse(Deno.args[0])) out[s] = Object.keys(await import(s)).length;\n" +
      "console.log(JSON.stringify(out));\n",
  );
  const specs = Object.keys(pkg.exports).map(specifier);
  const out = execFileSync(DENO, ["run", "-A", script, JSON.stringify(specs)], {
    cwd: dir,
    encoding: "utf8",
  });
  const counts = JSON.parse(out);
  for (const s of specs) ok(counts[s] > 0, `${s} exports nothing`);
});

test("the Deno example type checks against the package and streams a completion", (t) => {
  const run = spawnSync(
    DENO,
    ["run", "-A", "--check", "complete.ts", join(ROOT, "models/fortune"), "You will"],
    { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] },
  );
  const out = run.stdout;
  ok(out.startsWith("You will") && out.split("\n")[0].length > "You will".length + 5, out);
  assert.match(out, /\nfinish: length\n/);
  assert.match(out, /dynamo_frontend_requests_total\{[^}]*status="success"[^}]*\} 1\n/);
  // Deno 2.9.6 with Mesa's lavapipe sometimes dies by a signal in libc's exit handlers while a
  // terminated Worker that used WebGPU is still being torn down (about 1 run in 30 here; see
  // README, Known issues). Everything the script does has happened by then (checked above);
  // any other failure, or a non-zero exit code, fails the test.
  if (run.signal === "SIGSEGV" || run.signal === "SIGABRT") {
    t.diagnostic(`deno exited by ${run.signal} after its output (the known exit-time crash)`);
  } else {
    assert.equal(run.status, 0, `deno exited with ${run.status ?? run.signal}`);
  }
});
