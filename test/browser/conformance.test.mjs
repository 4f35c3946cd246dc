// The conformance kit runs unchanged in Chromium: every check against the mock engine.
import { test } from "node:test";
import assert from "node:assert/strict";
import { useBrowser } from "../support/browser.mjs";

const run = useBrowser();

test("conformance kit passes against the mock engine in Chromium", async (t) => {
  const { results } = await run("test/browser/pages/conformance.html", 60_000);
  assert.ok(results.length >= 8, `expected the kit's checks, got ${results.length}`);
  for (const r of results) {
    await t.test(r.name, () => assert.ok(r.passed, r.message));
  }
});
