// The conformance kit runs unchanged in Chromium: every check against the mock engine.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { launchBrowser, runPage, startServer } from "../support/browser.mjs";

let server, origin, browser;
before(async () => {
  ({ server, origin } = await startServer());
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

test("conformance kit passes against the mock engine in Chromium", async (t) => {
  const { results } = await runPage(browser, origin, "test/browser/pages/conformance.html", 60_000);
  assert.ok(results.length >= 8, `expected the kit's checks, got ${results.length}`);
  for (const r of results) {
    await t.test(r.name, () => assert.ok(r.passed, r.message));
  }
});
