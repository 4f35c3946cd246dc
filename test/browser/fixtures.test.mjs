// The reference models and the sampler on Chromium's SwiftShader WebGPU, on its default (cpu)
// kernel paths, and the small HF fixtures and one small GGUF again on the gpu kernel paths.
import { readFileSync } from "node:fs";
import { test } from "node:test";
import assert from "node:assert/strict";
import { useBrowser } from "../support/browser.mjs";

const run = useBrowser();

test("reference models and sampler in Chromium (SwiftShader WebGPU), on cpu and gpu kernel paths", async (t) => {
  const { results, logs } = await run("test/browser/pages/fixtures.html", 900_000);
  assert.ok(results.length >= 6, `expected every check, got ${results.length}\n${logs.join("\n")}`);
  const gpuPaths = results.filter((r) => r.name.endsWith("(gpu paths)"));
  // The dispatch check, the three HF fixtures (one twice: f32 and f16 KV), one GGUF.
  assert.equal(gpuPaths.length, 6, `gpu-path checks: ${gpuPaths.map((r) => r.name).join("; ")}`);
  // One check per file llama.cpp quantized.
  const manifest = JSON.parse(
    readFileSync(new URL("../fixtures/llamacpp/manifest.json", import.meta.url), "utf8"),
  );
  const llamaCpp = results.filter((r) => r.name.startsWith("llama.cpp's "));
  assert.equal(llamaCpp.length, manifest.files.length, "llama.cpp file checks");
  for (const r of results) {
    await t.test(r.name, () => {
      if (r.message) t.diagnostic(`${r.name}: ${r.message}`);
      assert.ok(r.passed, r.message);
    });
  }
});
