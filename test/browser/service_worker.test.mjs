// The service-worker host (issue 24, item 5), in Chromium (SwiftShader WebGPU): the fallback for
// browsers without WebGPU in a SharedWorker. Each tab registers Kiln's service-worker module as an
// app would (served as a module by Vite from the sources) and opens the fortune model with
// `openModel({ share: "service-worker", serviceWorker })`, which skips the SharedWorker (Chromium
// has WebGPU there and would never fall back). Checked: the service worker has WebGPU (the tabs
// get `sharing: "service-worker"`); the weights are fetched once for two tabs (counted at the
// server) and the host reports one load; both tabs generating at once get the greedy text of a
// tab alone, which is also what a page's own dedicated worker gives; an abort in tab A leaves tab
// B's request running; tab A closing mid-stream has its request cancelled and its KV blocks
// freed; and with no tab left the engine is released after the grace period (the service worker
// itself lives on), so a new tab loads it again.
import { after, before, test } from "node:test";
import { deepStrictEqual as deepEqual, ok, strictEqual as equal } from "node:assert/strict";
import { launchBrowser } from "../support/browser.mjs";
import { graceClock } from "../support/grace_clock.mjs";
import {
  checkSharedStreams,
  countingServer,
  openTwoTabs,
  PROMPT,
  start,
  stats,
  until,
  wait,
} from "../support/two_tabs.mjs";

const PAGE = "test/browser/pages/service.html";
const WEIGHTS = "/models/fortune/model.safetensors";

let server, origin, browser, context;
/** Requests the server saw for the weight file so far. */
let weightRequests;
const logs = [];

before(async () => {
  ({ server, origin, requests: weightRequests } = await countingServer(WEIGHTS));
  browser = await launchBrowser();
  context = await browser.newContext();
  context.on("weberror", (e) => logs.push(`[weberror] ${e.error()?.stack ?? e.error()}`));
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
  await tab.waitForSelector("body[data-state=ready]", { state: "attached", timeout: 120_000 });
  return tab;
}

const open = (tab, share = "service-worker") => tab.evaluate((s) => globalThis.tab.open(s), share);

test("two tabs share one engine in the service worker: one load, the single-tab text, per-tab aborts, a closed tab's KV freed, the engine released after the last tab", async (t) => {
  try {
    const a = await newTab();
    const inWorker = await until("Kiln's service worker", () => context.serviceWorkers()[0]);
    ok(inWorker.url().endsWith("/src/adapters/browser/service_worker.ts"), inWorker.url());
    const gpu = await inWorker.evaluate(async () => ({
      gpu: "gpu" in navigator,
      adapter: (await navigator.gpu?.requestAdapter()) != null,
    }));
    t.diagnostic(`navigator.gpu in Chromium's service worker: ${JSON.stringify(gpu)}`);
    const { b, loaded } = await openTwoTabs(a, newTab, open, "service-worker", weightRequests);
    const alone = await checkSharedStreams(t, a, b);

    // The last tab closes; the service worker stays, its engine goes after the grace period
    // (on the test's clock: the grace starts when the host hears the tab is gone, and passes
    // when the test says): a new tab loads it again, in the same service worker.
    const clock = graceClock(inWorker);
    await clock.install();
    await b.close();
    await until("the grace period to start", async () => (await clock.held()) === 1);
    equal(await clock.elapse(), 1, "the grace period passed");
    const c = await newTab();
    equal(await open(c).then((o) => o.sharing), "service-worker");
    const s = await stats(c);
    equal(s.tabs, 1);
    equal(s.engines, 1);
    ok(weightRequests() > loaded, "the new tab's engine fetched the weights again");
    t.diagnostic(`loads reported by the service worker after the last tab's close: ${s.loads}`);
    await start(c, "again", PROMPT, 24);
    deepEqual(await wait(c, "again"), alone, "the reloaded engine's greedy output");

    // The same model in the page's own dedicated worker gives the same greedy text.
    const d = await newTab();
    equal(await open(d, false).then((o) => o.sharing), "none");
    await start(d, "own", PROMPT, 24);
    deepEqual(await wait(d, "own"), alone, "a dedicated worker's greedy output");
    await c.close();
    await d.close();
  } catch (e) {
    throw new Error(`${e.stack ?? e}\n${logs.join("\n")}`);
  }
});
