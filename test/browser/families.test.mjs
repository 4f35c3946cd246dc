// Every model family of test/fixtures/families/ in Chromium (SwiftShader WebGPU): the F32 GGUF
// against llama.cpp's logits, and the HF folder quantized to Q4_K_M in the page against float64.
import { readFileSync } from "node:fs";
import { test } from "node:test";
import assert from "node:assert/strict";
import { useBrowser } from "../support/browser.mjs";

const run = useBrowser();

test("model families in Chromium (SwiftShader WebGPU) against llama.cpp and float64", async (t) => {
  const { results, logs } = await run("test/browser/pages/families.html", 600_000);
  const { families } = JSON.parse(
    readFileSync(new URL("../fixtures/families/index.json", import.meta.url), "utf8"),
  );
  // The adapter line, then two checks per family.
  assert.equal(results.length, 1 + 2 * families.length, logs.join("\n"));
  for (const r of results) {
    await t.test(r.name, () => {
      if (r.message) t.diagnostic(`${r.name}: ${r.message}`);
      assert.ok(r.passed, r.message);
    });
  }
});
