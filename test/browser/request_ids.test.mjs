// A request id is a label, never a key, in the page API too (Chromium, SwiftShader WebGPU):
// contexts with the same requestId through openModel's worker and through Kiln's SharedWorker
// reach only their own requests (test/browser/pages/request_ids.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { useBrowser } from "../support/browser.mjs";

const run = useBrowser();

test("request ids in the page API: borrowed, reused and one constant id a thousand times", async (t) => {
  const { results, logs } = await run("test/browser/pages/request_ids.html", 900_000);
  assert.equal(results.length, 7, logs.join("\n"));
  for (const r of results) {
    await t.test(r.name, () => assert.ok(r.passed, r.message));
    t.diagnostic(`${r.name}: ${r.message ?? ""}`);
  }
});
