// DP4A on Chromium's SwiftShader WebGPU (issue 25, item 4): bench/probes/pages/dp4a.html?quick runs a
// Q8_0 decode product by dot4I8Packed, its float twin and Kiln's matvec, each checked against
// float64 (bench/probes/dp4a_run.ts), as bench/probes/dp4a_test.ts does under Deno on lavapipe.
import { test } from "node:test";
import assert from "node:assert/strict";
import { useBrowser } from "../support/browser.mjs";

const run = useBrowser();

test("dot4I8Packed and float Q8_0 products within their float64 bounds on SwiftShader", async () => {
  const { results, logs } = await run("bench/probes/pages/dp4a.html?quick", 300_000);
  assert.equal(results.length, 1, logs.join("\n"));
  for (const r of results) assert.ok(r.passed, `${r.name}: ${r.message}\n${logs.join("\n")}`);
});
