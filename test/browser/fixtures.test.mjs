// The reference models and the sampler on Chromium's SwiftShader WebGPU.
import { test } from "node:test";
import assert from "node:assert/strict";
import { useBrowser } from "../support/browser.mjs";

const run = useBrowser();

test("reference models and sampler in Chromium (SwiftShader WebGPU)", async (t) => {
  const { results, logs } = await run("test/browser/pages/fixtures.html", 900_000);
  assert.ok(results.length >= 6, `expected every check, got ${results.length}\n${logs.join("\n")}`);
  for (const r of results) {
    await t.test(r.name, () => {
      if (r.message) t.diagnostic(`${r.name}: ${r.message}`);
      assert.ok(r.passed, r.message);
    });
  }
});
