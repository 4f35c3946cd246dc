// One engine for every tab of an origin (issue 24, item 5), in Chromium (SwiftShader WebGPU):
// two tabs of one browser context open the fortune model with `openModel({ share: true })`.
// Chromium gives a SharedWorker WebGPU, so both get `sharing: "origin"`; the model's weights are
// fetched once (counted at the server) and the host reports one load for two tabs; both tabs
// generate at once and get the single-tab greedy output; an abort in tab A leaves tab B's request
// running; tab A closing mid-stream has its request cancelled and its KV blocks freed (tab B's
// stats fall to what B holds); and once the last tab has closed, a new tab loads the model again.
import { after, before, test } from "node:test";
import { deepEqual, equal, ok } from "node:assert/strict";
import { launchBrowser } from "../support/browser.mjs";
import {
  checkSharedStreams,
  countingServer,
  openTwoTabs,
  PROMPT,
  start,
  stats,
  wait,
} from "../support/two_tabs.mjs";

const PAGE = "test/browser/pages/shared.html";
const WEIGHTS = "/models/fortune/model.safetensors";

let server, origin, browser, context;
/** Requests the server saw for the weight file so far. */
let weightRequests;
const logs = [];

before(async () => {
  ({ server, origin, requests: weightRequests } = await countingServer(WEIGHTS));
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

test("two tabs share one engine: one load, concurrent streams, per-tab aborts, a closed tab's KV freed, the last tab's close releasing it", async (t) => {
  try {
    const a = await newTab();
    const { b, loaded } = await openTwoTabs(a, newTab, open, "origin", weightRequests);
    let s;

    const alone = await checkSharedStreams(t, a, b);

    // The last tab closes: the shared worker and its engine go; a new tab loads again.
    await b.close();
    const c = await newTab();
    const openedC = await open(c);
    equal(openedC.sharing, "origin");
    const reloaded = weightRequests();
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
    equal(weightRequests(), reloaded);
    await c.evaluate(() => globalThis.tab.close());
    await new Promise((r) => setTimeout(r, 4000));
    await open(c);
    s = await stats(c);
    equal(s.loads, loads + 1, "back after the grace: the engine had been released, loaded again");
    equal(s.engines, 1);
    ok(weightRequests() > reloaded, "and its weights fetched again");
    await c.close();
  } catch (e) {
    throw new Error(`${e.stack ?? e}\n${logs.join("\n")}`);
  }
});
