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
  // Every engine runs the kit's 13 checks (the cancellation ones: before the first pull, in the
  // middle of a stream, and a signal aborted before generate(); Dynamo 1.5's optional members;
  // the KV-cache overload) plus its report line.
  for (const label of ["mock", "worker:fortune", "ort-worker:fortune"]) {
    const mine = results.filter((r) => r.name.startsWith(`conformance(${label}): `));
    assert.equal(mine.length, 14, `${label}: ${mine.map((r) => r.name).join(", ")}`);
    for (
      const check of [
        "cancellation",
        "cancellation_mid_stream",
        "cancellation_pre_aborted",
        "optional_members",
        "kv_cache_overload",
      ]
    ) {
      assert.ok(
        mine.some((r) => r.name === `conformance(${label}): ${check}`),
        `${label} ${check}`,
      );
    }
  }
  assert.equal(results.length, 42);
  for (const r of results) {
    await t.test(r.name, () => assert.ok(r.passed, r.message));
  }
});
