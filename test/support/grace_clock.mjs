// deno-lint-ignore-file explicit-module-boundary-types
/**
 * A fake clock for the engine host's grace period inside a browser's shared or service worker,
 * installed by a browser test: the worker's `setTimeout` holds every timer of the grace's length
 * (the host's default, 3 s) until the test calls `elapse`, and `clearTimeout` drops a held one,
 * so "within the grace" and "after the grace" are steps the test takes, not sleeps. Other timers
 * run as before. Shared workers are reached over DevTools (`Target.sendMessageToTarget`), service
 * workers through Playwright's `Worker.evaluate`.
 */

/** The host's grace period (`SharedEngineHost`'s default `graceMs`). */
export const GRACE_MS = 3000;

/** Runs in the worker: wraps `setTimeout` / `clearTimeout` once; the state is `__kilnGrace`. */
function install(graceMs) {
  if (globalThis.__kilnGrace) return true;
  const setT = globalThis.setTimeout, clearT = globalThis.clearTimeout;
  const held = new Map();
  let next = 2 ** 30;
  globalThis.__kilnGrace = {
    held: () => held.size,
    elapse() {
      const due = [...held.values()];
      held.clear();
      for (const run of due) run();
      return due.length;
    },
  };
  globalThis.setTimeout = (fn, ms, ...args) => {
    if (ms !== graceMs) return setT(fn, ms, ...args);
    const id = next++;
    held.set(id, () => fn(...args));
    return id;
  };
  globalThis.clearTimeout = (id) => held.has(id) ? void held.delete(id) : clearT(id);
  return true;
}

/** One DevTools `Runtime.evaluate` of `expression` in the worker target `targetId`. */
async function evaluateIn(cdp, targetId, expression) {
  const { sessionId } = await cdp.send("Target.attachToTarget", { targetId, flatten: false });
  const reply = new Promise((resolve) =>
    cdp.on("Target.receivedMessageFromTarget", (e) => {
      const m = JSON.parse(e.message);
      if (e.sessionId === sessionId && m.id === 1) resolve(m);
    })
  );
  const params = { expression, returnByValue: true, awaitPromise: true };
  await cdp.send("Target.sendMessageToTarget", {
    sessionId,
    message: JSON.stringify({ id: 1, method: "Runtime.evaluate", params }),
  });
  const m = await reply;
  await cdp.send("Target.detachFromTarget", { sessionId });
  if (m.error || m.result.exceptionDetails) {
    throw new Error(
      `in the shared worker: ${JSON.stringify(m.error ?? m.result.exceptionDetails)}`,
    );
  }
  return m.result.result.value;
}

/**
 * `expression` evaluated in every shared worker of `tab`'s browser context (one, but a worker
 * whose last tab just closed may not have gone yet); the values, in no order.
 */
async function inSharedWorkers(browser, tab, expression) {
  const own = await tab.context().newCDPSession(tab);
  const { targetInfo } = await own.send("Target.getTargetInfo");
  await own.detach();
  const cdp = await browser.newBrowserCDPSession();
  try {
    const workers = (await cdp.send("Target.getTargets")).targetInfos.filter((t) =>
      t.type === "shared_worker" && t.browserContextId === targetInfo.browserContextId
    );
    if (workers.length === 0) throw new Error("no shared worker in this browser context");
    const values = [];
    for (const w of workers) values.push(await evaluateIn(cdp, w.targetId, expression));
    return values;
  } finally {
    await cdp.detach();
  }
}

/**
 * The grace clock of a worker: `install()` (before the grace can start), `held()` (grace timers
 * waiting) and `elapse()` (run them all; how many ran). `where`: a Playwright service `Worker`, or
 * `{ browser, tab }` for the shared worker of `tab`'s context.
 */
export function graceClock(where) {
  const run = where.evaluate
    ? async (f, arg) => [await where.evaluate(f, arg)]
    : (f, arg) => inSharedWorkers(where.browser, where.tab, `(${f})(${JSON.stringify(arg)})`);
  const sum = async (f) => {
    await run(install, GRACE_MS);
    return (await run(f)).reduce((a, b) => a + b, 0);
  };
  return {
    install: async () => void await run(install, GRACE_MS),
    held: () => sum(() => globalThis.__kilnGrace.held()),
    elapse: () => sum(() => globalThis.__kilnGrace.elapse()),
  };
}
