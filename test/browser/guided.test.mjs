// Guided decoding runs in Chromium: Kiln's Web Worker (Vite's dev server, no pre-bundling) starts
// its grammar worker (XGrammar's WASM, nested in the engine's worker) and constrains fortune's
// sampled output (SwiftShader WebGPU); hostile constraints are refused by name while valid and
// free requests beside them are untouched, in the engine's worker and in Kiln's SharedWorker host
// (where XGrammar runs on the host's thread: Chromium gives a SharedWorker no `Worker`).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { launchBrowser, startServer } from "../support/browser.mjs";

let server, origin, browser;
before(async () => {
  ({ server, origin } = await startServer());
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

test("guided decoding in a Web Worker in Chromium: outputs, refusals, hostile constraints", async (t) => {
  const tab = await browser.newPage();
  const logs = [];
  const workers = [];
  tab.on("console", (m) => logs.push(`[${m.type()}] ${m.text()}`));
  tab.on("pageerror", (e) => logs.push(`[pageerror] ${e.stack ?? e.message}`));
  tab.on("worker", (w) => workers.push(w.url()));
  let results;
  try {
    await tab.goto(`${origin}/test/browser/pages/guided.html`);
    await tab.waitForFunction(() => globalThis.__kiln?.done === true, null, { timeout: 900_000 });
    results = await tab.evaluate(() => globalThis.__kiln.results);
  } catch (e) {
    throw new Error(`guided.html: ${e.message}\n${logs.join("\n")}`);
  } finally {
    await tab.close();
  }
  assert.equal(results.length, 9);
  for (const r of results) {
    await t.test(r.name, () => assert.ok(r.passed, r.message));
    t.diagnostic(`${r.name}: ${r.message ?? ""}`);
  }
  t.diagnostic(`workers: ${workers.join(", ")}`);
});
