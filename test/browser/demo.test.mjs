// The built web demo (what `npm start` serves) driven in Chromium (SwiftShader WebGPU):
// generate with the embedded fortune model (its load showing the pipelines compiling, with no
// console error nor failed request), stop midway, the metrics panel, the model store (fortune
// cached in OPFS and listed in the cache panel with its size, a reload that asks the server
// nothing for the weights, a second page sharing the first one's engine, Delete), an ONNX export
// opened by URL, a model loaded from local files, a chat model of the catalog
// (`models/catalog.json`, its Hub URLs pointed at fortune's GGUF next to the page) loaded by URL
// into the store and answering in chat mode and a tools request with `auto`, a URL that 404s, and
// the no-WebGPU screen. Screenshots land in test/artifacts/.
import { after, before, test } from "node:test";
import assert, { equal, ok } from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
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

const WEIGHTS = "/models/fortune/model.safetensors";
/** The catalog as shipped; the build's copy points its Hub URLs at `/hub/` next to the page. */
const CATALOG = JSON.parse(readFileSync(`${ROOT}models/catalog.json`, "utf8"));
const HUB = "https://huggingface.co/";
/** The first catalog entry's path under `/hub/`, where fortune's Q8_0 GGUF stands in for it. */
const CHAT_MODEL = `/hub/${CATALOG.models[0].url.slice(HUB.length)}`;
let server, origin, browser, page;
/** Requests the server saw for fortune's weight file (any method: HEAD, GET, Range). */
let weightRequests = 0;
const pageErrors = [];
/** Console errors and failed requests (network errors, HTTP >= 400) since the last check. */
const consoleErrors = [];
const failedRequests = [];

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  await build({ configFile, build: { outDir, emptyOutDir: true } });
  // fortune's ONNX export next to the page, to be opened by URL.
  cpSync(`${ROOT}${onnxFortunePath().slice(1)}`, `${outDir}onnx-fortune/`, { recursive: true });
  // The catalog's first chat model: fortune converted by `deno task quantize` (its chat template
  // in the file), served where the catalog, pointed at this origin, says it is.
  const gguf = `${outDir}${CHAT_MODEL.slice(1)}`;
  mkdirSync(gguf.slice(0, gguf.lastIndexOf("/")), { recursive: true });
  execFileSync(`${ROOT}node_modules/.bin/deno`, [
    ...["run", "-A", `${ROOT}src/adapters/deno/quantize.ts`],
    ...["--model", FORTUNE, "--type", "q8_0", "--out", gguf],
  ], {
    stdio: "ignore",
    env: { ...process.env, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? tmpdir() },
  });
  const local = CATALOG.models.map((m) => ({ ...m, url: m.url.replace(HUB, "/hub/") }));
  writeFileSync(`${outDir}models/catalog.json`, JSON.stringify({ ...CATALOG, models: local }));
  server = await preview({
    configFile,
    build: { outDir },
    preview: { host: "127.0.0.1", port: 0, strictPort: false },
    plugins: [{
      name: "count-weight-requests",
      configurePreviewServer(s) {
        s.middlewares.use((req, _res, next) => {
          if (new URL(req.url, "http://x").pathname === WEIGHTS) weightRequests++;
          next();
        });
      },
    }],
  });
  origin = `http://localhost:${server.httpServer.address().port}`;
  browser = await launchBrowser();
  // One context: its pages share an origin's storage and its SharedWorker.
  const context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
  page = await context.newPage();
  page.on("pageerror", (e) => pageErrors.push(e.stack ?? e.message));
  page.on("console", (m) => {
    if (m.type() === "error") consoleErrors.push(`${m.text()} (${m.location().url})`);
  });
  page.on("requestfailed", (r) => {
    // Chromium reports a HEAD whose (empty) body is never read as ERR_ABORTED: the model store
    // and the demo's probe ask HEAD for sizes; those are answers, not failures.
    const error = r.failure()?.errorText;
    if (r.method() !== "HEAD" || error !== "net::ERR_ABORTED") {
      failedRequests.push(`${r.url()}: ${error}`);
    }
  });
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

/** Wait for the page to be ready; a timeout names the status and error lines it was stuck at. */
async function ready(p = page) {
  try {
    await p.waitForSelector("body[data-state=ready]", { timeout: 120_000 });
  } catch (e) {
    const line = (sel) => p.locator(sel).textContent().catch(() => "?");
    throw new Error(
      `${e.message}\nstatus: ${await line("#status")}\nerror: ${await line("#error")}`,
    );
  }
}
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

/**
 * No console error and no failed request since the last call (and none kept for the next);
 * `navigated`: requests aborted (the old page's, cut by a navigation) are not failures.
 */
function assertNoErrors(navigated = false) {
  const aborted = (f) => navigated && f.endsWith(": net::ERR_ABORTED");
  const found = [
    ...consoleErrors.splice(0),
    ...failedRequests.splice(0).filter((f) => !aborted(f)),
  ];
  assert.deepEqual(found, [], "console errors or failed requests");
}

test("the demo loads the embedded fortune model and streams a seeded fortune", async () => {
  await ready();
  assert.match(await text("#model-name"), /^fortune \(1024 tokens of context\)/);
  ok(await page.locator("#chat").isEnabled(), "fortune has a chat template of its own");
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

/** The model store's OPFS entries (`kiln-models/<key>.json` sidecars) with their bytes on disk. */
function opfsEntries(p = page) {
  return p.evaluate(async () => {
    const root = await navigator.storage.getDirectory();
    let dir;
    try {
      dir = await root.getDirectoryHandle("kiln-models");
    } catch {
      return [];
    }
    const out = [];
    for await (const [name, handle] of dir.entries()) {
      if (!name.endsWith(".json")) continue;
      const meta = JSON.parse(await (await handle.getFile()).text());
      let bytes = 0;
      try {
        bytes = (await (await dir.getFileHandle(name.replace(/\.json$/, ".bin"))).getFile()).size;
      } catch { /* an absent file's record has no bytes */ }
      out.push({ url: meta.url, size: meta.size, complete: meta.complete, bytes });
    }
    return out;
  });
}

const fortuneItem = () => `#cache-panel li[data-base="${origin}/models/fortune/"]`;

test("fortune is cached in OPFS through the model store and listed in the cache panel with its size", async () => {
  await ready();
  const weights = (await opfsEntries()).find((e) => e.url === `${origin}${WEIGHTS}`);
  ok(weights, "an OPFS entry for the weights");
  equal(weights.complete, true);
  equal(weights.size, statSync(`${FORTUNE}model.safetensors`).size);
  equal(weights.bytes, weights.size, "the whole file is on disk");
  ok(weightRequests > 0, "the weights came from the server once");
  await page.click("#model-panel summary");
  const item = page.locator(fortuneItem());
  await item.waitFor();
  const bytes = Number(await item.getAttribute("data-bytes"));
  ok(bytes >= weights.size, `the panel's size ${bytes} counts the weights`);
  equal(await item.getAttribute("data-complete"), "true");
  assert.match(
    await item.textContent(),
    new RegExp(`^fortune: ${(bytes / 1e6).toFixed(1)} MB Delete$`),
  );
  // The ready line names the shared engine and the GPU memory.
  assert.match(
    await text("#status"),
    /engine shared by 1 tab of this origin; GPU memory: weights \d+\.\d MB, KV \d+\.\d MB, total \d+\.\d MB/,
  );
  equal(await page.getAttribute("body", "data-sharing"), "origin");
  await page.screenshot({ path: `${ARTIFACTS}demo-cache-panel.png`, fullPage: true });
});

test("a reload asks the server nothing for the weights; a second page shares the first one's engine", async () => {
  const before = weightRequests;
  await page.reload();
  await ready();
  equal(weightRequests, before, "no request for the weight file after a reload");
  assertNoErrors(true);
  const second = await page.context().newPage();
  try {
    second.on("pageerror", (e) => pageErrors.push(e.stack ?? e.message));
    await second.goto(`${origin}/`);
    await ready(second);
    assert.match(await second.locator("#status").textContent(), /engine shared by 2 tabs/);
    equal(weightRequests, before, "the second page fetched no weights");
    // Both pages generate on the one engine.
    await second.fill("#prompt", "You will");
    await second.fill("#max-tokens", "8");
    await second.fill("#seed", "7");
    await second.click("#generate");
    await second.waitForSelector("#finish[data-finish]", { timeout: 120_000 });
    ok((await second.locator("#output").textContent()).startsWith("You will"));
  } finally {
    await second.close();
  }
  assert.deepEqual(pageErrors, []);
});

test("Delete removes fortune from the cache panel and from OPFS", async () => {
  await page.click("#model-panel summary");
  const item = page.locator(fortuneItem());
  await item.waitFor();
  await item.locator("button").click();
  await item.waitFor({ state: "detached" });
  const left = (await opfsEntries()).filter((e) => e.url.startsWith(`${origin}/models/fortune/`));
  assert.deepEqual(left, []);
  assert.match(await text("#cache-panel"), /no models cached/);
  await page.click("#model-panel summary"); // closed again
});

test("an ONNX export opened by URL is downloaded into the store and runs on onnxruntime-web", async () => {
  const base = `${origin}/onnx-fortune/`;
  await page.click("#model-panel summary");
  await page.fill("#model-url", base);
  await page.click("#url-form button[type=submit]");
  await page.waitForSelector("body[data-state=loading]");
  await ready();
  assert.match(await text("#model-name"), /^onnx-fortune \(1024 tokens/);
  assert.match(await text("#status"), /engine: this tab's own/);
  const graph = (await opfsEntries()).find((e) => e.url === `${base}onnx/model.onnx`);
  ok(graph?.complete && graph.bytes === graph.size && graph.size > 0, JSON.stringify(graph));
  await page.locator(`#cache-panel li[data-base="${base}"]`).waitFor();
  await page.evaluate(() => document.querySelector("#finish")?.removeAttribute("data-finish"));
  await generate({ prompt: "You will", maxTokens: 8, seed: 7 });
  const { output, finish, line } = await finished();
  ok(output.startsWith("You will") && output.length > "You will".length, output);
  ok(finish === "length" || finish === "eos", line);
  await page.click("#model-panel summary");
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
  ok(await page.locator("#chat").isDisabled(), "files without tokenizer_config.json: no template");
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

test("a chat model of the catalog loads by URL into the store and answers chat and tools auto", async () => {
  consoleErrors.splice(0); // what earlier tests left (their probes' 404s) is theirs
  failedRequests.splice(0);
  // The panel is open since the local-files test; opened here whatever came before.
  await page.evaluate(() => void (document.querySelector("#model-panel").open = true));
  const options = page.locator("#catalog option");
  await page.waitForFunction(() => !document.querySelector("#catalog-set").disabled);
  equal(await options.count(), CATALOG.models.length);
  const first = CATALOG.models[0];
  equal(
    await options.first().textContent(),
    `${first.name} · ${first.quant} · ${Math.round(first.bytes / 1e6)} MB`,
  );
  await page.selectOption("#catalog", "0");
  await page.click("#catalog-form button[type=submit]");
  await page.waitForSelector("body[data-state=loading]");
  await ready();
  assert.match(await text("#model-name"), /^Qwen3-0\.6B-Q8_0 \(1024 tokens of context\)/);
  const size = statSync(`${outDir}${CHAT_MODEL.slice(1)}`).size;
  const stored = (await opfsEntries()).find((e) => e.url === `${origin}${CHAT_MODEL}`);
  ok(stored?.complete && stored.bytes === size, JSON.stringify(stored));
  ok(await page.locator("#chat").isChecked(), "chat mode for a chat model");
  await page.evaluate(() => document.querySelector("#finish")?.removeAttribute("data-finish"));
  await generate({ prompt: "What is the weather in Paris?", maxTokens: 16, seed: 5 });
  const chat = await finished();
  ok(!chat.output.includes("user:"), chat.output);
  ok(chat.finish === "length" || chat.finish === "eos", chat.line);
  // The tool-call example with auto: fortune never learnt to call, so it answers in text.
  await page.selectOption("#tool-choice", "auto");
  await page.evaluate(() => document.querySelector("#finish")?.removeAttribute("data-finish"));
  await page.fill("#max-tokens", "16");
  await page.click("#tool-example");
  const auto = await finished();
  ok(auto.finish === "length" || auto.finish === "stop" || auto.finish === "tool_calls", auto.line);
  equal(await page.getAttribute("#check", "data-check"), "valid", await text("#check"));
  assert.deepEqual(pageErrors, []);
  assertNoErrors();
  await page.screenshot({ path: `${ARTIFACTS}demo-catalog-chat.png`, fullPage: true });
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
