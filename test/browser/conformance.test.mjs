// The conformance kit runs unchanged in Chromium: against the mock engine, and against the
// WebGPU engine and onnxruntime-web's engine in a Web Worker behind comlink (SwiftShader WebGPU)
// on the fortune model and its ONNX export.
import { test } from "node:test";
import assert from "node:assert/strict";
import { useBrowser } from "../support/browser.mjs";
import { onnxFortunePath } from "../support/onnx_web.mjs";

const run = useBrowser();

test("conformance kit passes in Chromium: mock engine, WorkerEngine on fortune, ort engine in a worker (SwiftShader)", async (t) => {
  const page = `test/browser/pages/conformance.html?onnx=${encodeURIComponent(onnxFortunePath())}`;
  const { results } = await run(page, 600_000);
  assert.ok(results.some((r) => r.name.startsWith("conformance(ort-worker")), "the ort checks ran");
  assert.ok(results.length >= 20, `expected the kit's checks, got ${results.length}`);
  for (const r of results) {
    await t.test(r.name, () => assert.ok(r.passed, r.message));
  }
});
