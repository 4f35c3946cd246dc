// One engine for every tab of an origin (issue 24, item 5), in Chromium (SwiftShader WebGPU):
// two tabs of one browser context open the fortune model with `openModel({ share: true })`.
// Chromium gives a SharedWorker WebGPU, so both get `sharing: "origin"`; the model's weights are
// fetched once (counted at the server) and the host reports one load for two tabs; both tabs
// generate at once and get the single-tab greedy output; an abort in tab A leaves tab B's request
// running; tab A closing mid-stream has its request cancelled and its KV blocks freed (tab B's
// stats fall to what B holds); and once the last tab has closed, a new tab loads the model again.
import { after, before, test } from "node:test";
import { deepEqual, equal, ok } from "node:assert/strict";
import { launchBrowser, startServer } from "../support/browser.mjs";

const PAGE = "test/browser/pages/shared.html";
const WEIGHTS = "/models/fortune/model.safetensors";

let server, origin, browser, context;
/** Requests the server saw for the weight file. */
let weightRequests = 0;
const logs = [];

before(async () => {
  ({ server, origin } = await startServer([{
    name: "count-weight-requests",
    configureServer(s) {
      s.middlewares.use((req, _res, next) => {
        if (new URL(req.url, "http://x").pathname === WEIGHTS) weightRequests++;
        next();
      });
    },
  }]));
  browser = await launchBrowser();
  context = await browser.newContext();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function newTab() {
  const tab = await context.newPage();
  tab.on("console", (m) => logs.push(`[${m.type()}] ${m.text()}`));
  tab.on("pageerror", (e) => logs.push(`[pageerror] ${e.stack ?? e.message}`));
  await tab.goto(`${origin}/${PAGE}`);
  await tab.waitForSelector("body[data-state=ready]", { state: "attached" });
  return tab;
}

const open = (tab) => tab.evaluate(() => globalThis.tab.open(true));
const stats = (tab) => tab.evaluate(() => globalThis.tab.stats());
const start = (tab, id, prompt, max) =>
  tab.evaluate(([id, prompt, max]) => globalThis.tab.start(id, prompt, max), [id, prompt, max]);
const wait = (tab, id) => tab.evaluate((id) => globalThis.tab.wait(id), id);
const tokens = (tab, id) => tab.evaluate((id) => globalThis.tab.tokens(id), id);

async function until(what, check, timeoutMs = 60_000) {
  const t0 = Date.now();
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const PROMPT = [256, 72, 101, 108, 108, 111];
/** 130 tokens, no prefix in common with PROMPT: 9 KV blocks of 16 before any output. */
const LONG = Array.from({ length: 130 }, (_, i) => 100 + (i % 50));

test("two tabs share one engine: one load, concurrent streams, per-tab aborts, a closed tab's KV freed, the last tab's close releasing it", async (t) => {
  try {
    const a = await newTab();
    const openedA = await open(a);
    equal(openedA.sharing, "origin", "Chromium's SharedWorker has WebGPU: the engine is shared");
    const loaded = weightRequests;
    ok(loaded > 0, "the first tab fetched the weights");
    let s = await stats(a);
    equal(s.loads, 1);
    equal(s.tabs, 1);

    const b = await newTab();
    const openedB = await open(b);
    equal(openedB.sharing, "origin");
    deepEqual(openedB.config, openedA.config, "the second tab gets the running engine's config");
    equal(weightRequests, loaded, "the second tab fetched no weights");
    s = await stats(b);
    equal(s.loads, 1, "loaded once for two tabs");
    equal(s.tabs, 2);

    // Greedy output of one tab alone, then of both tabs at once.
    await start(a, "alone", PROMPT, 24);
    const alone = await wait(a, "alone");
    equal(alone.finish, "length");
    equal(alone.tokens, 24);
    await Promise.all([start(a, "both", PROMPT, 24), start(b, "both", PROMPT, 24)]);
    const [x, y] = await Promise.all([wait(a, "both"), wait(b, "both")]);
    deepEqual(x, alone, "tab A's stream, run beside tab B's");
    deepEqual(y, alone, "tab B's stream, run beside tab A's");

    // An abort in tab A does not reach tab B.
    await Promise.all([start(a, "ab", PROMPT, 200), start(b, "ab", PROMPT, 60)]);
    await until("tab A's first tokens", async () => (await tokens(a, "ab")) > 0);
    await a.evaluate(() => globalThis.tab.abort("ab"));
    const [abortedA, keptB] = await Promise.all([wait(a, "ab"), wait(b, "ab")]);
    equal(abortedA.finish, "cancelled");
    ok(abortedA.tokens < 200, `tab A stopped at ${abortedA.tokens} tokens`);
    equal(keptB.finish, "length", "tab B's request ran to its end");
    equal(keptB.tokens, 60);

    // Tab A closes mid-stream: its request is cancelled and its blocks freed.
    await Promise.all([start(a, "long", LONG, 600), start(b, "long", [256, 72], 600)]);
    await until(
      "both tabs streaming",
      async () => (await tokens(a, "long")) > 0 && (await tokens(b, "long")) > 0,
    );
    const before = await stats(b);
    ok(before.usedBlocks >= 10, `both tabs hold blocks: ${before.usedBlocks}`);
    await a.close();
    const after = await until("tab A's blocks freed", async () => {
      const s = await stats(b);
      const bHolds = Math.ceil((2 + (await tokens(b, "long")) + 48) / 16);
      return s.tabs === 1 && s.usedBlocks <= bHolds && s;
    });
    ok(after.usedBlocks < before.usedBlocks - 5, `${before.usedBlocks} -> ${after.usedBlocks}`);
    t.diagnostic(
      `KV blocks in use: ${before.usedBlocks} with both tabs, ${after.usedBlocks} after A closed`,
    );
    const longB = await wait(b, "long");
    equal(longB.finish, "length", "tab B's stream was not disturbed");
    equal(longB.tokens, 600);

    // The last tab closes: the shared worker and its engine go; a new tab loads again.
    await b.close();
    const c = await newTab();
    const openedC = await open(c);
    equal(openedC.sharing, "origin");
    const reloaded = weightRequests;
    ok(reloaded > loaded, "the new tab fetched the weights again");
    s = await stats(c);
    equal(s.tabs, 1);
    t.diagnostic(`weight requests: ${loaded} for two tabs, ${reloaded} after a new tab reloaded`);
    t.diagnostic(`loads reported by the new tab's shared worker: ${s.loads}`);
    await start(c, "again", PROMPT, 24);
    deepEqual(await wait(c, "again"), alone, "the reloaded engine's greedy output");

    // In a shared worker that lives on (this page keeps it): a tab that leaves (close()) and
    // comes back within the grace period joins the engine; after it, the engine is gone.
    const loads = s.loads;
    await c.evaluate(() => globalThis.tab.close());
    await open(c);
    equal((await stats(c)).loads, loads, "back within the grace: joined, not loaded");
    equal(weightRequests, reloaded);
    await c.evaluate(() => globalThis.tab.close());
    await new Promise((r) => setTimeout(r, 4000));
    await open(c);
    s = await stats(c);
    equal(s.loads, loads + 1, "back after the grace: the engine had been released, loaded again");
    equal(s.engines, 1);
    ok(weightRequests > reloaded, "and its weights fetched again");
    await c.close();
  } catch (e) {
    throw new Error(`${e.stack ?? e}\n${logs.join("\n")}`);
  }
});
