// The built web demo's tool-call example driven in Chromium (SwiftShader WebGPU) on the embedded
// fortune model, greedy: with `tool_choice` required and a small `max_tokens` (fortune repeats
// calls until it is cut), the reply ends `length`, the panel shows the complete calls kept, each
// fitting its function, and the check line says the reply was cut at max_tokens and how many
// complete calls were kept; a named call that ends by itself (`tool_calls`) says nothing of a cut.
// Screenshots land in test/artifacts/.
import { after, before, test } from "node:test";
import assert, { ok } from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build, preview } from "vite";
import { launchBrowser } from "../support/browser.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const ARTIFACTS = `${ROOT}test/artifacts/`;
const configFile = `${ROOT}demo/vite.config.ts`;
// Its own build folder: node --test runs test files in parallel.
const outDir = `${ROOT}dist/demo-tool-cut-test/`;

let server, browser, page;
const pageErrors = [];

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  await build({ configFile, build: { outDir, emptyOutDir: true }, logLevel: "warn" });
  server = await preview({
    configFile,
    build: { outDir },
    preview: { host: "127.0.0.1", port: 0, strictPort: false },
  });
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1000, height: 1200 } });
  page.on("pageerror", (e) => pageErrors.push(e.stack ?? e.message));
  await page.goto(`http://localhost:${server.httpServer.address().port}/`);
  await ready();
}, { timeout: 300_000 });

after(async () => {
  await browser?.close();
  await server?.close();
});

const ready = () => page.waitForSelector("body[data-state=ready]", { timeout: 120_000 });
const text = (sel) => page.locator(sel).textContent();

/** Run the tool-call example greedily with `choice` and `maxTokens`; what the page shows. */
async function callTool(choice, maxTokens) {
  await page.selectOption("#tool-choice", choice);
  await page.fill("#prompt", "");
  await page.fill("#temperature", "0");
  await page.fill("#max-tokens", String(maxTokens));
  await page.fill("#seed", "1");
  await page.evaluate(() => delete document.getElementById("finish").dataset.finish);
  await page.click("#tool-example");
  await page.waitForSelector("#finish[data-finish]", { timeout: 180_000 });
  await ready();
  return {
    calls: JSON.parse(await text("#output")),
    finish: await page.getAttribute("#finish", "data-finish"),
    check: await page.getAttribute("#check", "data-check"),
    note: await text("#check"),
  };
}

test("the tool-call example says when max_tokens cut the reply, and how many calls it kept", async () => {
  const cut = await callTool("required", 120);
  assert.equal(cut.finish, "length", cut.note);
  ok(Array.isArray(cut.calls) && cut.calls.length >= 1, JSON.stringify(cut.calls));
  for (const c of cut.calls) {
    ok(["get_weather", "get_time"].includes(c.name), JSON.stringify(c));
    ok(typeof c.arguments === "object" && c.arguments !== null, JSON.stringify(c));
  }
  assert.equal(cut.check, "valid", cut.note);
  assert.match(cut.note, /cut at max_tokens; (\d+) complete call\(s\) kept/);
  assert.equal(Number(/; (\d+) complete/.exec(cut.note)[1]), cut.calls.length);
  await page.screenshot({ path: `${ARTIFACTS}demo-tool-call-cut.png`, fullPage: true });

  const whole = await callTool("get_time", 300);
  assert.equal(whole.finish, "tool_calls", whole.note);
  assert.equal(whole.calls.length, 1);
  assert.equal(whole.check, "valid", whole.note);
  ok(!whole.note.includes("cut"), whole.note);
  assert.deepEqual(pageErrors, []);
});
