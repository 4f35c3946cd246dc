// Kiln as an app outside this repository gets it: `npm pack`, the tarball installed offline into
// a temporary copy of examples/vite-app/, a Vite build of that app, the build served, and the
// fortune model run in Kiln's Web Worker in Chromium (SwiftShader WebGPU): generate, Stop, the
// OpenAI-shaped chat helper and the metrics text. A screenshot lands in test/artifacts/.
import { after, before, test } from "node:test";
import assert, { ok } from "node:assert/strict";
import { cpSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { build, preview } from "vite";
import { launchBrowser } from "../support/browser.mjs";
import { FORTUNE_FILES, installExample, packKiln, ROOT } from "../support/package.mjs";

const FORTUNE = join(ROOT, "models/fortune");
let app, server, origin, browser, page;
const pageErrors = [];

before(async () => {
  app = installExample("vite-app", packKiln());
  const models = join(app, "public/models/fortune");
  mkdirSync(models, { recursive: true });
  for (const f of FORTUNE_FILES) {
    cpSync(join(FORTUNE, f), join(models, f));
  }
  const configFile = join(app, "vite.config.js");
  await build({ root: app, configFile, logLevel: "warn" });
  server = await preview({
    root: app,
    configFile,
    preview: { host: "127.0.0.1", port: 0, strictPort: false },
  });
  origin = `http://localhost:${server.httpServer.address().port}`;
  browser = await launchBrowser();
  page = await browser.newPage();
  page.on("pageerror", (e) => pageErrors.push(e.stack ?? e.message));
  await page.goto(`${origin}/`);
}, { timeout: 180_000 });

after(async () => {
  await browser?.close();
  await server?.close();
});

const ready = () => page.waitForSelector("body[data-state=ready]", { timeout: 120_000 });
const text = (sel) => page.locator(sel).textContent();

async function run(click, prompt, maxTokens, seed = 1) {
  await page.evaluate(() => document.querySelector("#finish")?.removeAttribute("data-finish"));
  await page.fill("#prompt", prompt);
  await page.fill("#max-tokens", String(maxTokens));
  await page.fill("#seed", String(seed));
  await page.click(click);
}

async function finished() {
  await page.waitForSelector("#finish[data-finish]", { timeout: 120_000 });
  await ready();
  return {
    output: await text("#output"),
    finish: await page.getAttribute("#finish", "data-finish"),
  };
}

test("the Vite app built on the packed tarball loads fortune and streams text", async () => {
  await ready();
  assert.equal(await text("#status"), "ready: fortune");
  await run("#generate", "You will", 24);
  const { output, finish } = await finished();
  ok(output.startsWith("You will") && output.length > "You will".length + 5, output);
  assert.equal(finish, "length");
  assert.deepEqual(pageErrors, []);
});

test("Stop ends a long generation midway with finish cancelled", async () => {
  await run("#generate", "A", 900);
  // At once: a sampled fortune may reach its end-of-text token after a few dozen tokens.
  await page.waitForSelector("body[data-state=generating]");
  await page.click("#stop");
  const { output, finish } = await finished();
  assert.equal(finish, "cancelled");
  ok(output.length < 900, `${output.length} characters`);
});

test("the chat helper streams OpenAI-shaped chunks and the metrics text counts every request", async () => {
  await run("#chat", "Tell me my fortune", 16);
  const { output, finish } = await finished();
  ok(output.length > 0, "chat output");
  assert.equal(finish, "length");
  const metrics = await text("#metrics");
  assert.match(metrics, /dynamo_frontend_requests_total\{[^}]*status="success"[^}]*\} 2\n/);
  assert.match(metrics, /dynamo_frontend_requests_total\{[^}]*status="cancelled"[^}]*\} 1\n/);
  mkdirSync(join(ROOT, "test/artifacts"), { recursive: true });
  await page.screenshot({ path: join(ROOT, "test/artifacts/vite-app.png"), fullPage: true });
});
