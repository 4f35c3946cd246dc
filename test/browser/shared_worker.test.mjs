// One engine for every tab of an origin (issue 24, item 5), in Chromium (SwiftShader WebGPU):
// two tabs of one browser context open the fortune model with `openModel({ share: true })`.
// Chromium gives a SharedWorker WebGPU, so both get `sharing: "origin"`; the model's weights are
// fetched once (counted at the server) and the host reports one load for two tabs; both tabs
// generate at once and get the single-tab greedy output; an abort in tab A leaves tab B's request
// running; tab A closing mid-stream has its request cancelled and its KV blocks freed (tab B's
// stats fall to what B holds); and once the last tab has closed, a new tab loads the model again.
// A SharedWorker the browser kills while both tabs stream (issue 36, item 4) is seen at once: both
// streams end with `Disconnected` within seconds, not the heartbeat's 30 s; later calls are
// refused with the same error, closing the model does not hang, and the next `open` starts a new
// shared worker. The same for the service worker hosting the engine (`share: "service-worker"`).
import { after, before, test } from "node:test";
import { performance } from "node:perf_hooks";
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
  tokens,
  until,
  wait,
} from "../support/two_tabs.mjs";

const PAGE = "test/browser/pages/shared.html";
/** The same page, connecting through Kiln's service worker (service_worker.test.mjs's page). */
const SERVICE_PAGE = "test/browser/pages/service.html";
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

async function newTab(where = context, page = PAGE) {
  const tab = await where.newPage();
  tab.on("console", (m) => logs.push(`[${m.type()}] ${m.text()}`));
  tab.on("pageerror", (e) => logs.push(`[pageerror] ${e.stack ?? e.message}`));
  await tab.goto(`${origin}/${page}`);
  await tab.waitForSelector("body[data-state=ready]", { state: "attached", timeout: 120_000 });
  return tab;
}

const open = (tab, share = true) => tab.evaluate((s) => globalThis.tab.open(s), share);

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
    // The grace runs on the test's clock: it starts when the host hears the tab left and passes
    // when the test says.
    const loads = s.loads;
    const clock = graceClock({ browser, tab: c });
    await clock.install();
    await c.evaluate(() => globalThis.tab.close());
    await until("the grace period to start", async () => (await clock.held()) === 1);
    await open(c);
    equal((await stats(c)).loads, loads, "back within the grace: joined, not loaded");
    equal(await clock.held(), 0, "the join called the release off");
    equal(weightRequests(), reloaded);
    await c.evaluate(() => globalThis.tab.close());
    await until("the grace period to start again", async () => (await clock.held()) === 1);
    equal(await clock.elapse(), 1, "the grace period passed");
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

/**
 * Kill the workers of `type` (`shared_worker`, `service_worker`) of `tab`'s browser context the
 * way the browser ends one: DevTools' `Target.closeTarget` has the browser terminate the worker
 * (no code of the worker runs to exit). Resolves once they are gone from the browser's targets;
 * returns how many there were.
 */
async function killWorkers(tab, type) {
  const own = await tab.context().newCDPSession(tab);
  const { targetInfo } = await own.send("Target.getTargetInfo");
  await own.detach();
  const cdp = await browser.newBrowserCDPSession();
  const workers = async () =>
    (await cdp.send("Target.getTargets")).targetInfos.filter((t) =>
      t.type === type && t.browserContextId === targetInfo.browserContextId
    );
  const killed = await workers();
  for (const w of killed) {
    const { success } = await cdp.send("Target.closeTarget", { targetId: w.targetId });
    ok(success, `closeTarget ${w.url}`);
  }
  await until(`the ${type} gone`, async () => (await workers()).length === 0, 10_000);
  await cdp.detach();
  return killed.length;
}

/** `promise`, or a rejection naming `what` once `ms` have passed. */
function within(ms, what, promise) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Streams must end this soon after the kill: far below the heartbeat's 30 s. */
const SEEN_WITHIN_MS = 5000;

/**
 * Two tabs of a new browser context open the model on `page` with `share`; the host's worker
 * (a target of `type`) is killed while both stream: both streams end with `Disconnected` within
 * `SEEN_WITHIN_MS`, later calls are refused with the same error, closing does not hang, and the
 * next open starts a new host that loads the model and streams.
 */
async function checkKilled(t, page, share, sharing, type) {
  const own = await browser.newContext();
  try {
    const a = await newTab(own, page);
    const b = await newTab(own, page);
    for (const tab of [a, b]) equal((await open(tab, share)).sharing, sharing);
    equal((await stats(b)).tabs, 2, "both tabs on one host");
    // 400 tokens each: both fit the 64 KV blocks, and neither ends before the kill.
    await Promise.all([start(a, "kill", PROMPT, 400), start(b, "kill", PROMPT, 400)]);
    await until(
      "both tabs streaming",
      async () => (await tokens(a, "kill")) > 0 && (await tokens(b, "kill")) > 0,
    );
    const t0 = performance.now();
    equal(await killWorkers(a, type), 1, `one ${type} killed`);
    const ends = await Promise.all([a, b].map(async (tab) => {
      const end = await wait(tab, "kill");
      return { ...end, ms: Math.round(performance.now() - t0) };
    }));
    t.diagnostic(`streams ended ${ends.map((e) => `${e.ms} ms`).join(", ")} after the kill`);
    t.diagnostic(`tab A's stream ended with: ${ends[0].error}`);
    for (const [name, end] of [["A", ends[0]], ["B", ends[1]]]) {
      equal(end.type, "Disconnected", `tab ${name}'s stream: ${end.error}`);
      equal(end.finish, undefined, `tab ${name}'s stream was cut, not finished`);
      ok(end.tokens < 400, `tab ${name} got ${end.tokens} tokens`);
      ok(end.ms < SEEN_WITHIN_MS, `tab ${name}'s stream ended ${end.ms} ms after the kill`);
    }

    // Later calls are refused with the same typed error; closing the model does not hang.
    for (const [tab, end] of [[a, ends[0]], [b, ends[1]]]) {
      await start(tab, "later", PROMPT, 8);
      const later = await within(SEEN_WITHIN_MS, "a generate after the kill", wait(tab, "later"));
      equal(later.type, "Disconnected", later.error);
      equal(later.error, end.error, "the same error as the stream's");
      equal(later.tokens, 0);
      await within(SEEN_WITHIN_MS, "close()", tab.evaluate(() => globalThis.tab.close()));
    }

    // The next open starts a new host, which loads the model and streams.
    equal((await open(a, share)).sharing, sharing);
    const s = await stats(a);
    equal(s.loads, 1, "a new host loaded the model");
    equal(s.tabs, 1);
    await start(a, "after", PROMPT, 8);
    const after = await wait(a, "after");
    equal(after.finish, "length", after.error);
    equal(after.tokens, 8);
  } catch (e) {
    throw new Error(`${e.stack ?? e}\n${logs.join("\n")}`);
  } finally {
    await own.close();
  }
}

test("a killed SharedWorker is seen at once: both tabs' streams end with Disconnected in well under the heartbeat's 30 s, later calls are refused", async (t) => {
  await checkKilled(t, PAGE, true, "origin", "shared_worker");
});

test("the same for a killed service worker hosting the engine", async (t) => {
  await checkKilled(t, SERVICE_PAGE, "service-worker", "service-worker", "service_worker");
});
