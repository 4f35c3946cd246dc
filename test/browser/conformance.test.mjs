// The conformance kit runs unchanged in Chromium: against the mock engine, and against the
// WebGPU engine in a Web Worker behind comlink (SwiftShader WebGPU) on the fortune model.
import { test } from "node:test";
import assert from "node:assert/strict";
import { useBrowser } from "../support/browser.mjs";

const run = useBrowser();

test("conformance kit passes in Chromium: mock engine, and WorkerEngine on fortune (SwiftShader)", async (t) => {
  const { results } = await run("test/browser/pages/conformance.html", 600_000);
  assert.ok(results.length >= 20, `expected the kit's checks, got ${results.length}`);
  for (const r of results) {
    await t.test(r.name, () => assert.ok(r.passed, r.message));
  }
});
