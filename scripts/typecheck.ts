/**
 * Type check the sources three times: for Deno (everything), for a browser page (DOM lib with
 * @webgpu/types) and for a Web Worker (WebWorker lib); the last two skip Deno adapters, CLIs,
 * Deno tests and (for the worker) the test pages and the demo. Used by `deno task check`.
 */
const root = new URL("../", import.meta.url);

async function* walk(dir: URL, rel: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const path = `${rel}/${e.name}`;
    if (e.isDirectory && e.name === "node_modules") continue;
    if (e.isDirectory) yield* walk(new URL(`${e.name}/`, dir), path);
    else if (e.name.endsWith(".ts")) yield path;
  }
}

async function files(dir: string): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const f of walk(new URL(`${dir}/`, root), dir)) out.push(f);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return out.sort();
}

const isDenoOnly = (f: string) =>
  f.endsWith("_test.ts") || f.startsWith("src/adapters/deno/") || /\/cli[^/]*\.ts$/.test(f);

async function check(label: string, args: string[]): Promise<boolean> {
  console.log(`typecheck (${label}): ${args.filter((a) => !a.endsWith(".ts")).join(" ")}`);
  const status = await new Deno.Command(Deno.execPath(), {
    args: ["check", "--quiet", ...args],
    cwd: root,
  }).spawn().status;
  return status.success;
}

const src = await files("src");
const peersInstalled = await Deno.stat(new URL("tools/peers/node_modules/", root)).then(
  () => true,
  () => false,
);
const browserPages = await files("test/browser/pages");
// The web demo's modules (its Vite config is Node-side and checked by Vite itself).
const demo = (await files("demo")).filter((f) => !f.endsWith(".config.ts"));
const denoSide = [
  ...src,
  ...(await files("test")).filter((f) => !f.startsWith("test/browser/")),
  // bench/peers and tools/ import packages installed on first use (tools/peers/package.json).
  ...(await files("bench")).filter((f) => !f.startsWith("bench/peers/") || peersInstalled),
  ...(peersInstalled ? await files("tools") : []),
];
const browserSide = [...src.filter((f) => !isDenoOnly(f)), ...browserPages, ...demo];
const workerSide = src.filter((f) => !isDenoOnly(f));
const ok = (await check("deno", denoSide)) &&
  (await check("browser: dom + @webgpu/types", [
    "--config",
    "config/deno.browser.json",
    ...browserSide,
  ])) &&
  (await check("worker: webworker + @webgpu/types", [
    "--config",
    "config/deno.worker.json",
    ...workerSide,
  ]));
Deno.exit(ok ? 0 : 1);
