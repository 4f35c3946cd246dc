// deno-lint-ignore-file explicit-module-boundary-types
// Two tabs on one shared engine (issue 24, item 5): what the SharedWorker and service-worker
// tests check alike, driven through the page `test/browser/pages/shared.ts` exposes as
// `globalThis.tab`. A server that counts the weight file's requests, the page calls, and the
// streams' checks: one tab's greedy text equal to both tabs' at once, an abort in tab A not
// reaching tab B, and tab A closing mid-stream freeing its KV blocks while B runs to its end.
import { deepStrictEqual as deepEqual, ok, strictEqual as equal } from "node:assert/strict";
import { startServer } from "./browser.mjs";

/** A Vite server of the repository counting the requests for `path` (`requests()`). */
export async function countingServer(path) {
  let requests = 0;
  const { server, origin } = await startServer([{
    name: "count-weight-requests",
    configureServer(s) {
      s.middlewares.use((req, _res, next) => {
        if (new URL(req.url, "http://x").pathname === path) requests++;
        next();
      });
    },
  }]);
  return { server, origin, requests: () => requests };
}

export const stats = (tab) => tab.evaluate(() => globalThis.tab.stats());
export const start = (tab, id, prompt, max) =>
  tab.evaluate(([id, prompt, max]) => globalThis.tab.start(id, prompt, max), [id, prompt, max]);
export const wait = (tab, id) => tab.evaluate((id) => globalThis.tab.wait(id), id);
export const tokens = (tab, id) => tab.evaluate((id) => globalThis.tab.tokens(id), id);

/** `check()`'s first truthy value, polled every 25 ms; throws past `timeoutMs`. */
export async function until(what, check, timeoutMs = 60_000) {
  const t0 = Date.now();
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export const PROMPT = [256, 72, 101, 108, 108, 111];
/** 130 tokens, no prefix in common with PROMPT: 9 KV blocks of 16 before any output. */
const LONG = Array.from({ length: 130 }, (_, i) => 100 + (i % 50));

/**
 * The stream checks on tabs `a` and `b` of one engine; tab `a` is closed at the end. Returns the
 * greedy result of `PROMPT` (24 tokens) in one tab alone.
 */
export async function checkSharedStreams(t, a, b) {
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
  return alone;
}

/**
 * Open the model in tab `a` and then in a new tab, each with `open`: the first loads it (the
 * server counts weight requests, `requests()`), the second joins as `sharing` with the same config
 * and fetches nothing. Returns the second tab and the weight requests of the load.
 */
export async function openTwoTabs(a, newTab, open, sharing, requests) {
  const openedA = await open(a);
  equal(openedA.sharing, sharing, `the first tab's engine is shared (${sharing})`);
  const loaded = requests();
  ok(loaded > 0, "the first tab's engine fetched the weights");
  let s = await stats(a);
  equal(s.loads, 1);
  equal(s.tabs, 1);

  const b = await newTab();
  const openedB = await open(b);
  equal(openedB.sharing, sharing);
  deepEqual(openedB.config, openedA.config, "the second tab gets the running engine's config");
  equal(requests(), loaded, "the second tab fetched no weights");
  s = await stats(b);
  equal(s.loads, 1, "loaded once for two tabs");
  equal(s.tabs, 2);
  return { b, loaded };
}
