// Chrome's Prompt API over Kiln in Chromium (SwiftShader WebGPU): `KilnLanguageModel` on fortune,
// served by the Vite server over the repository, checked against the IDL's shapes (and this
// Chromium's own `LanguageModel`) and behaviours: availability, create with download progress,
// prompt, streamed deltas, a JSON Schema constraint, append, clone, usage, quota, abort and
// destroy (test/browser/pages/prompt_api.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { useBrowser } from "../support/browser.mjs";

const run = useBrowser();

test("the Prompt API's LanguageModel over openModel, in Chromium", async (t) => {
  const { results, logs } = await run("test/browser/pages/prompt_api.html", 600_000);
  assert.equal(results.length, 11, logs.join("\n"));
  for (const r of results) {
    await t.test(r.name, () => assert.ok(r.passed, r.message));
    t.diagnostic(`${r.name}: ${r.message ?? ""}`);
  }
});
