// The built web demo (what `npm start` serves) driven in Chromium (SwiftShader WebGPU):
// generate with the embedded fortune model (its load showing the pipelines compiling, with no
// console error nor failed request), stop midway, the metrics panel, a reload served from Cache
// Storage, a model loaded from local files, a URL that 404s, and the no-WebGPU screen.
// Screenshots land in test/artifacts/.
import { after, before, test } from "node:test";
import assert, { ok } from "node:assert/strict";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { build, preview } from "vite";
import { launchBrowser } from "../support/browser.mjs";
import { onnxFortunePath } from "../support/onnx_web.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const ARTIFACTS = `${ROOT}test/artifacts/`;
const FORTUNE = `${ROOT}models/fortune/`;
const configFile = `${ROOT}demo/vite.config.ts`;
const outDir = `${ROOT}dist/demo-test/`;

let server, origin, browser, page;
const pageErrors = [];
/** Console errors and failed requests (network errors, HTTP >= 400) since the last check. */
const consoleErrors = [];
const failedRequests = [];

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  await build({ configFile, build: { outDir, emptyOutDir: true } });
  server = await preview({
    configFile,
    build: { outDir },
    preview: { host: "127.0.0.1", port: 0, strictPort: false },
  });
  origin = `http://localhost:${server.httpServer.address().port}`;
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
  page.on("pageerror", (e) => pageErrors.push(e.stack ?? e.message));
  page.on("console", (m) => {
    if (m.type() === "error") consoleErrors.push(`${m.text()} (${m.location().url})`);
  });
  page.on("requestfailed", (r) => failedRequests.push(`${r.url()}: ${r.failure()?.errorText}`));
  page.on("response", (r) => {
    if (r.status() >= 400) failedRequests.push(`${r.url()}: HTTP ${r.status()}`);
  });
  // Every status line the page shows, in order (the load's phases pass in a moment each).
  await page.addInitScript(() => {
    globalThis.__statuses = [];
    document.addEventListener("DOMContentLoaded", () => {
      const status = document.getElementById("status");
      new MutationObserver(() => globalThis.__statuses.push(status.textContent)).observe(status, {
        childList: true,
        characterData: true,
        subtree: true,
      });
    });
  });
  await page.goto(`${origin}/`);
});

after(async () => {
  await browser?.close();
  await server?.close();
});

const ready = () => page.waitForSelector("body[data-state=ready]", { timeout: 120_000 });
const text = (sel) => page.locator(sel).textContent();

async function generate({ prompt, maxTokens, seed }) {
  await page.fill("#prompt", prompt);
  await page.fill("#max-tokens", String(maxTokens));
  await page.fill("#seed", seed === undefined ? "" : String(seed));
  await page.click("#generate");
}

async function finished() {
  await page.waitForSelector("#finish[data-finish]", { timeout: 120_000 });
  await ready();
  return {
    output: await text("#output"),
    finish: await page.getAttribute("#finish", "data-finish"),
    line: await text("#finish"),
  };
}

/** No console error and no failed request since the last call (and none kept for the next). */
function assertNoErrors() {
  const found = [...consoleErrors.splice(0), ...failedRequests.splice(0)];
  assert.deepEqual(found, [], "console errors or failed requests");
}

test("the demo loads the embedded fortune model and streams a seeded fortune", async () => {
  await ready();
  assert.match(await text("#model-name"), /^fortune \(1024 tokens of context\)/);
  // The load showed the weights' upload, then the pipelines compiling, to the last one.
  const statuses = await page.evaluate(() => globalThis.__statuses);
  const compiling = statuses.filter((s) => s.startsWith("compiling GPU kernels"));
  ok(statuses.some((s) => s.startsWith("weights to the GPU")), statuses.join("\n"));
  const last = /^compiling GPU kernels: (\d+) \/ (\d+)$/.exec(compiling.at(-1) ?? "");
  ok(last && last[1] === last[2] && Number(last[2]) > 0, compiling.join("\n"));
  await page.evaluate(() => document.querySelector("#finish")?.removeAttribute("data-finish"));
  await generate({ prompt: "You will", maxTokens: 48, seed: 7 });
  const { output, finish, line } = await finished();
  assert.ok(output.startsWith("You will"), output);
  assert.ok(output.length > "You will".length + 10, `too little text: ${JSON.stringify(output)}`);
  assert.ok(finish === "length" || finish === "eos", line);
  assert.deepEqual(pageErrors, []);
  // Not one console error for the whole load and generation: no probe of an absent file.
  assertNoErrors();
  await page.screenshot({ path: `${ARTIFACTS}demo-fortune.png`, fullPage: true });
});

test("Stop ends a long generation midway with finish reason cancelled", async () => {
  await page.evaluate(() => document.querySelector("#finish")?.removeAttribute("data-finish"));
  await generate({ prompt: "A", maxTokens: 900, seed: 1 });
  await page.waitForSelector("body[data-state=generating]");
  await page.waitForFunction(() => document.querySelector("#output").textContent.length > 20);
  await page.click("#stop");
  const { finish, line } = await finished();
  assert.equal(finish, "cancelled", line);
  const tokens = Number(/^(\d+) tokens/.exec(line)?.[1]);
  assert.ok(tokens > 0 && tokens < 900, line);
});

test("the metrics panel charts tokens/s, time to first token and KV cache use from Prometheus text", async () => {
  await page.evaluate(() => document.querySelector("#finish")?.removeAttribute("data-finish"));
  await generate({ prompt: "The", maxTokens: 300, seed: 3 });
  // tokens/s is the rate of the token counters between two scrapes (every 500 ms).
  await page.waitForFunction(
    () => {
      const v = document.querySelector("[data-metric=tps] .value")?.textContent ?? "";
      return Number.parseFloat(v) > 0;
    },
    null,
    { timeout: 60_000 },
  );
  await finished();
  await page.waitForFunction(() =>
    document.querySelector("[data-metric=ttft] .value")?.textContent?.endsWith("ms")
  );
  const kv = await text("[data-metric=kv] .value");
  assert.match(kv, /^\d+(\.\d)? %$/);
  const points = await page.locator("[data-metric=tps] polyline").getAttribute("points");
  assert.ok(points.split(" ").length >= 2, `chart points: ${points}`);
  await page.screenshot({ path: `${ARTIFACTS}demo-metrics.png`, fullPage: true });
});

test("a reload takes the model from Cache Storage instead of downloading it again", async () => {
  const weights = [];
  const onRequest = (r) => {
    if (r.url().endsWith("model.safetensors")) weights.push(r.url());
  };
  page.on("request", onRequest);
  await page.reload();
  await ready();
  page.off("request", onRequest);
  assert.deepEqual(weights, []);
  // Clearing the cache makes the next reload download again.
  await page.click("#model-panel summary");
  await page.click("#clear-cache");
  await page.waitForFunction(() =>
    document.querySelector("#status")?.textContent === "downloaded models cleared"
  );
  page.on("request", onRequest);
  await page.reload();
  await ready();
  page.off("request", onRequest);
  assert.equal(weights.length, 1, weights.join(", "));
  assertNoErrors();
});

test("a model loaded from local files generates the same seeded text as the embedded one", async () => {
  await page.evaluate(() => document.querySelector("#finish")?.removeAttribute("data-finish"));
  await generate({ prompt: "Luck", maxTokens: 32, seed: 11 });
  const fromUrl = (await finished()).output;
  await page.click("#model-panel summary");
  await page.setInputFiles("#model-files", [
    `${FORTUNE}config.json`,
    `${FORTUNE}tokenizer.json`,
    `${FORTUNE}model.safetensors`,
  ]);
  await page.waitForSelector("body[data-state=loading]");
  await ready();
  assert.match(await text("#model-name"), /^model \(1024 tokens/);
  await page.evaluate(() => document.querySelector("#finish")?.removeAttribute("data-finish"));
  await generate({ prompt: "Luck", maxTokens: 32, seed: 11 });
  const fromFiles = (await finished()).output;
  assert.equal(fromFiles, fromUrl);
});

test("GGUF files llama.cpp quantized, picked as files, load and generate (Q2_K/Q3_K, IQ3_S's grid)", async () => {
  for (const ftype of ["Q2_K", "IQ3_S"]) {
    await page.setInputFiles("#model-files", [
      `${ROOT}test/fixtures/llamacpp/fortune/${ftype}.gguf`,
    ]);
    await page.waitForSelector("body[data-state=loading]");
    await ready();
    assert.match(await text("#model-name"), /\(1024 tokens of context\)/);
    await page.evaluate(() => document.querySelector("#finish")?.removeAttribute("data-finish"));
    await generate({ prompt: "You will", maxTokens: 16, seed: 7 });
    const { output, finish, line } = await finished();
    ok(output.startsWith("You will") && output.length > "You will".length, `${ftype}: ${output}`);
    ok(finish === "length" || finish === "eos", `${ftype}: ${line}`);
  }
  assert.deepEqual(pageErrors, []);
});

test("fortune's ONNX export picked as files runs on onnxruntime-web in the worker and generates", async () => {
  const onnx = `${ROOT}${onnxFortunePath().slice(1)}`;
  await page.setInputFiles("#model-files", [
    `${onnx}config.json`,
    `${onnx}tokenizer.json`,
    `${onnx}onnx/model.onnx`,
  ]);
  await page.waitForSelector("body[data-state=loading]");
  await ready();
  assert.match(await text("#model-name"), /^model \(1024 tokens/);
  await page.evaluate(() => document.querySelector("#finish")?.removeAttribute("data-finish"));
  await generate({ prompt: "You will", maxTokens: 16, seed: 7 });
  const { output, finish, line } = await finished();
  ok(output.startsWith("You will") && output.length > "You will".length, output);
  ok(finish === "length" || finish === "eos", line);
  assert.deepEqual(pageErrors, []);
});

test("chat mode is offered for a model with a chat template and renders through it", async () => {
  ok(await page.locator("#chat").isDisabled(), "fortune has no chat template of its own");
  const dir = mkdtempSync(`${tmpdir()}/kiln-demo-`);
  writeFileSync(
    `${dir}/tokenizer_config.json`,
    JSON.stringify({
      chat_template: "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}" +
        "{% if add_generation_prompt %}assistant: {% endif %}",
    }),
  );
  await page.setInputFiles("#model-files", [
    `${FORTUNE}config.json`,
    `${FORTUNE}tokenizer.json`,
    `${FORTUNE}model.safetensors`,
    `${dir}/tokenizer_config.json`,
  ]);
  await page.waitForSelector("body[data-state=loading]");
  await ready();
  ok(await page.locator("#chat").isEnabled());
  await page.check("#chat");
  await page.evaluate(() => document.querySelector("#finish")?.removeAttribute("data-finish"));
  await generate({ prompt: "Tell me my fortune", maxTokens: 24, seed: 5 });
  const { output, finish, line } = await finished();
  // In chat mode the output holds the answer only, not the rendered prompt.
  ok(!output.includes("user:"), output);
  ok(finish === "length" || finish === "eos", line);
  await page.uncheck("#chat");
});

test("a model URL that 404s gets a message naming the URL and the status", async () => {
  const bad = `${origin}/no-such-model/`;
  await page.fill("#model-url", bad);
  await page.click("#url-form button[type=submit]");
  await page.waitForSelector("#error:not([hidden])");
  const message = await text("#error");
  assert.ok(message.includes(`${bad}config.json`), message);
  assert.match(message, /HTTP 404/);
  await ready(); // the loaded model keeps serving
});

test("files that are not a model get a message naming what is missing", async () => {
  await page.setInputFiles("#model-files", [`${FORTUNE}tokenizer.json`]);
  await page.waitForSelector("#error:not([hidden])");
  assert.match(await text("#error"), /not a model \(missing config\.json, \*\.safetensors\)/);
});

test("without WebGPU the demo shows what to do instead of a blank page", async () => {
  const bare = await browser.newPage();
  await bare.addInitScript(() => {
    Object.defineProperty(Navigator.prototype, "gpu", { get: () => undefined });
  });
  await bare.goto(`${origin}/`);
  await bare.waitForSelector("body[data-state=no-webgpu]");
  assert.ok(await bare.locator("#no-webgpu").isVisible());
  assert.match(await bare.locator("#no-webgpu").textContent(), /enable-unsafe-webgpu/);
  assert.ok(!(await bare.locator("#app").isVisible()));
  await bare.screenshot({ path: `${ARTIFACTS}demo-no-webgpu.png` });
  await bare.close();
});
