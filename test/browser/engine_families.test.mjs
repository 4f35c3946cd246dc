// Every model family of test/fixtures/families/ through the product's engine in Chromium
// (SwiftShader WebGPU): `openModel` on the F32 GGUF starts WebGpuEngine in Kiln's Web Worker;
// greedy from every prefix of the fixture's tokens against llama.cpp's argmax and logprobs, and
// on one family two requests at once and an abort midway (test/browser/pages/engine_families.ts).
import { readFileSync } from "node:fs";
import { test } from "node:test";
import assert from "node:assert/strict";
import { useBrowser } from "../support/browser.mjs";

const run = useBrowser();

test("model families through WebGpuEngine in a Web Worker in Chromium against llama.cpp", async (t) => {
  const t0 = performance.now();
  const { results, logs } = await run("test/browser/pages/engine_families.html", 600_000);
  t.diagnostic(`page ran in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const { families } = JSON.parse(
    readFileSync(new URL("../fixtures/families/index.json", import.meta.url), "utf8"),
  );
  // One check per family, and the concurrent-requests and abort checks on one of them.
  assert.equal(results.length, families.length + 2, logs.join("\n"));
  for (const r of results) {
    await t.test(r.name, () => {
      if (r.message) t.diagnostic(`${r.name}: ${r.message}`);
      assert.ok(r.passed, r.message);
    });
  }
});
