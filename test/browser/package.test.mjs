// Kiln as an app outside this repository gets it: `npm pack`, the tarball installed offline into
// a temporary copy of examples/vite-app/, the fortune model copied from the package into the
// app's public/ as docs/embedding.md says, a Vite build of that app (its sizes checked against budgets),
// the build served, and the fortune model run in Kiln's Web Worker in Chromium (SwiftShader
// WebGPU): generate, Stop, the OpenAI-shaped chat helper and the metrics text. A screenshot lands
// in test/artifacts/.
import { after, before, test } from "node:test";
import assert, { ok } from "node:assert/strict";
import { cpSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { build, preview } from "vite";
import { launchBrowser } from "../support/browser.mjs";
import { installExample, packKiln, ROOT } from "../support/package.mjs";

let app, server, origin, browser, page;
const pageErrors = [];

before(async () => {
  app = installExample("vite-app", packKiln());
  // docs/embedding.md: `cp -r node_modules/@kiln/kiln/models/fortune public/models/`.
  mkdirSync(join(app, "public/models"), { recursive: true });
  cpSync(join(app, "node_modules/@kiln/kiln/models/fortune"), join(app, "public/models/fortune"), {
    recursive: true,
  });
  const configFile = join(app, "vite.config.js");
  await build({ root: app, configFile, logLevel: "warn" });
  server = await preview({
    root: app,
    configFile,
    preview: { host: "127.0.0.1", port: 0, strictPort: false },
  });
  origin = `http://localhost:${server.httpServer.address().port}`;
  browser = await launchBrowser();
  page = await browser.newPage();
  page.on("pageerror", (e) => pageErrors.push(e.stack ?? e.message));
  await page.goto(`${origin}/`);
}, { timeout: 180_000 });

after(async () => {
  await browser?.close();
  await server?.close();
});

/**
 * Budgets in KiB (1024 bytes) for what a page loads to run Kiln, raw and gzipped (level 9): the
 * Vite app's main chunk and Kiln's worker as Vite builds them, and the package's self-contained
 * browser build. About 10% above the sizes measured when they were last set (docs/embedding.md
 * quotes them): reset when issue 21's block formats pushed the worker past the first budgets
 * (173 KiB when those were set, 191 KiB with kernel paths, pipeline warm-up, library error
 * classification and three more GGUF formats), and again at 22 formats (219 KiB: each format's
 * codecs, WGSL fragment and tables; the main chunk keeps only their geometry, 170 KiB), and at
 * issue 22's families (main chunk 191.6 KiB, worker 255 KiB: the eleven family descriptions and
 * their config rules, which the page's header check reads too, the 79-name pre-tokenizer table the
 * page's tokenizer needs, and in the worker the MoE, GeGLU, window and soft-cap kernels; budgets
 * set about 3% above, as this is growth in what runs, not in dead code), and at issue 23's OpenAI
 * layer and the rest of issue 22 (main chunk 206.9 KiB, worker 271.3 KiB: on the page
 * `openModel`'s tool-call readers, the `response_format`/`tools` checks and the chat template
 * fixes; in the worker gpt-oss's sinks, YaRN and biased experts, the token mask and the KV window's
 * block release; XGrammar is a chunk loaded on the first constrained request, outside these
 * files; again ~3% above), and at issue 24's model store (main chunk 229.3 KiB, worker 293.8 KiB:
 * on the page the store's OPFS and Cache Storage backends and its downloader with SHA-256, read
 * for the text side on a reload, and the shared and service-worker clients; in the worker the
 * same store, the staged upload, the memory ledger and the fit check; ~3% above), and at issue
 * 25's speculative decoding and CPU attention kernel (worker 306.1 KiB, 96.3 gzipped: the
 * drafter, the verified rows' bookkeeping and their counters, and `attention_rows.wgsl` with the
 * fragment it shares with `attention.wgsl`, shaders being text in the bundle; ~3% above), and at
 * issue 26's KV events with Dynamo's router hashes (worker 328.4 KiB, 106.1 gzipped: hash-wasm's
 * XXH3, a WebAssembly module inlined as base64, ~15 KiB of the growth, with the draft model's
 * drafter and the router gauges; ~3% above), and at issues 36 and 37 (main chunk 242.9 KiB, 76.7
 * gzipped, worker 338.2 KiB, 109.3: the model store's per-chunk XXH32 check on read, the shared
 * host's lifetime lock, tool calls streamed and kept when cut, refusals naming the OpenAI field,
 * and in the worker the client of the grammar worker; the JSON Schema compiler is not in these
 * files: it runs in the grammar worker; ~3% above), and at issue 38 (main chunk 266.7 KiB, 83.6
 * gzipped; kiln.js 280.5, 87.4: `KilnModel.responses` (the Responses API's request mapping, item
 * and event builders and bounded store), reasoning output's readers, prompt arrays; kiln.js also
 * carries the Prompt API's `LanguageModel`, which an app that does not import it shakes off;
 * ~3% above), and at issue 41's hybrid families (main chunk 282.7 KiB, 88.7 gzipped; kiln.js 297,
 * 93; worker 387.3, 123.3: the layer kinds and three more family descriptions on the page, and in
 * the worker the recurrent state, the three recurrent step compilers and six kernels' WGSL and
 * wrappers; shared worker 391.7, 124.6; service worker 1631.7, 568.6; ~3% above).
 * The grammar worker (`kiln_grammar_worker.js`, issue 37: XGrammar inlined with Kiln's schema,
 * regex and choice compilers; 1090.4 KiB, 399.1 gzipped) is loaded on the first constrained
 * request only, as the XGrammar chunk was before it; budget ~3% above.
 * The shared worker (`openModel({ share: true })`, issue 24) is the same engine host plus the
 * per-tab bookkeeping (297.6 KiB with the store, 309.9 KiB with issue 25's additions, ~332 KiB
 * with issue 26's, 342.5 KiB and 110.6 gzipped with issue 36's lifetime lock; ~3% above); the
 * service worker (its fallback, which an app registers) is that host in one file with XGrammar
 * inlined, as a service worker cannot `import()` (1457 KiB, 511 KiB gzipped when its budget was
 * set, 1578.6 and 553.1 with issue 37's compilers, which run on its thread: a service worker
 * cannot start a worker; ~3% above);
 * `@huggingface/tasks`'s tables, which a bundler keeps unless told they are free of side effects
 * (scripts/build_vendor.mjs), would add ~215 KiB to each file.
 */
const BUDGET_KIB = {
  "vite main chunk": [291, 92],
  "vite worker": [399, 127],
  "browser/kiln.js": [306, 96],
  "browser/kiln_worker.js": [399, 127],
  "vite shared worker": [404, 129],
  "browser/kiln_shared_worker.js": [404, 129],
  "browser/kiln_service_worker.js": [1681, 586],
  "browser/kiln_grammar_worker.js": [1123, 411],
};

test("the Vite build's main chunk and worker, and the browser build, are within their budgets", (t) => {
  const dist = join(app, "dist");
  const html = readFileSync(join(dist, "index.html"), "utf8");
  const main = /<script type="module"[^>]* src="\/(assets\/[^"]+\.js)"/.exec(html)?.[1];
  ok(main, "index.html loads a module script");
  const mainCode = readFileSync(join(dist, main), "utf8");
  const worker = /new Worker\(\s*new URL\(\s*[`"']\/(assets\/[^`"']+\.js)[`"']/.exec(mainCode)?.[1];
  ok(worker, "the main chunk starts a worker from an emitted file");
  const shared = /new SharedWorker\(\s*new URL\(\s*[`"']\/(assets\/[^`"']+\.js)[`"']/.exec(mainCode)
    ?.[1];
  ok(shared, "the main chunk starts a shared worker from an emitted file");
  const browserDir = join(app, "node_modules/@kiln/kiln/dist/pkg/browser");
  const files = {
    "vite main chunk": join(dist, main),
    "vite worker": join(dist, worker),
    "browser/kiln.js": join(browserDir, "kiln.js"),
    "browser/kiln_worker.js": join(browserDir, "kiln_worker.js"),
    "vite shared worker": join(dist, shared),
    "browser/kiln_shared_worker.js": join(browserDir, "kiln_shared_worker.js"),
    "browser/kiln_service_worker.js": join(browserDir, "kiln_service_worker.js"),
    "browser/kiln_grammar_worker.js": join(browserDir, "kiln_grammar_worker.js"),
  };
  const kib = (n) => Math.round((n / 1024) * 10) / 10;
  const over = [];
  for (const [name, file] of Object.entries(files)) {
    const bytes = readFileSync(file);
    const [raw, gz] = [kib(bytes.length), kib(gzipSync(bytes, { level: 9 }).length)];
    t.diagnostic(`${name}: ${raw} KiB, ${gz} KiB gzipped`);
    const [maxRaw, maxGz] = BUDGET_KIB[name];
    if (raw > maxRaw) over.push(`${name}: ${raw} KiB is over its budget of ${maxRaw} KiB`);
    if (gz > maxGz) over.push(`${name}: ${gz} KiB gzipped is over its budget of ${maxGz} KiB`);
  }
  // Every file measured before any is judged, so one run shows them all.
  ok(over.length === 0, over.join("; "));
});

const ready = () => page.waitForSelector("body[data-state=ready]", { timeout: 120_000 });
const text = (sel) => page.locator(sel).textContent();

async function run(click, prompt, maxTokens, seed = 1) {
  await page.evaluate(() => document.querySelector("#finish")?.removeAttribute("data-finish"));
  await page.fill("#prompt", prompt);
  await page.fill("#max-tokens", String(maxTokens));
  await page.fill("#seed", String(seed));
  await page.click(click);
}

async function finished() {
  await page.waitForSelector("#finish[data-finish]", { timeout: 120_000 });
  await ready();
  return {
    output: await text("#output"),
    finish: await page.getAttribute("#finish", "data-finish"),
  };
}

test("the Vite app built on the packed tarball loads fortune and streams text", async () => {
  await ready();
  assert.equal(await text("#status"), "ready: fortune");
  await run("#generate", "You will", 24);
  const { output, finish } = await finished();
  ok(output.startsWith("You will") && output.length > "You will".length + 5, output);
  assert.equal(finish, "length");
  assert.deepEqual(pageErrors, []);
});

test("Stop ends a long generation midway with finish cancelled", async () => {
  await run("#generate", "A", 900);
  // At once: a sampled fortune may reach its end-of-text token after a few dozen tokens.
  await page.waitForSelector("body[data-state=generating]");
  await page.click("#stop");
  const { output, finish } = await finished();
  assert.equal(finish, "cancelled");
  ok(output.length < 900, `${output.length} characters`);
});

test("the chat helper streams OpenAI-shaped chunks and the metrics text counts every request", async () => {
  await run("#chat", "Tell me my fortune", 16);
  const { output, finish } = await finished();
  ok(output.length > 0, "chat output");
  assert.equal(finish, "length");
  const metrics = await text("#metrics");
  assert.match(metrics, /dynamo_frontend_requests_total\{[^}]*status="success"[^}]*\} 2\n/);
  assert.match(metrics, /dynamo_frontend_requests_total\{[^}]*status="cancelled"[^}]*\} 1\n/);
  mkdirSync(join(ROOT, "test/artifacts"), { recursive: true });
  await page.screenshot({ path: join(ROOT, "test/artifacts/vite-app.png"), fullPage: true });
});
