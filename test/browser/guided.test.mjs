// Guided decoding runs in Chromium: XGrammar's WASM loads in Kiln's Web Worker (Vite's dev
// server, no pre-bundling) and constrains fortune's sampled output (SwiftShader WebGPU).
import { test } from "node:test";
import assert from "node:assert/strict";
import { useBrowser } from "../support/browser.mjs";

const run = useBrowser();

test("guided decoding in a Web Worker in Chromium: json schema, regex, choice, a bad regex", async (t) => {
  const { results } = await run("test/browser/pages/guided.html", 300_000);
  assert.equal(results.length, 4);
  for (const r of results) {
    await t.test(r.name, () => assert.ok(r.passed, r.message));
    t.diagnostic(`${r.name}: ${r.message ?? ""}`);
  }
});
