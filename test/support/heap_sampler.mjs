// deno-lint-ignore-file explicit-module-boundary-types
// JS heap of a page and of its workers, through the Chrome DevTools Protocol: the page's own
// session answers `Runtime.getHeapUsage`; its dedicated workers are auto-attached (non-flat
// sessions) and asked through `Target.sendMessageToTarget`. `usedSize` is the V8 heap;
// `backingStorageSize` the ArrayBuffers' backing stores, which live outside it (a model's bytes
// held in JS memory would show there). In Chromium 1xx's workers `performance.memory` is not
// exposed, so CDP is the way in.

/**
 * Start sampling `page` (a Playwright page) and its workers every `intervalMs`. `stop()` returns
 * the peaks in bytes: `{ page: { used, backing }, worker: { used, backing }, samples }`; a worker
 * that was never sampled (it ended before the first tick) reads 0.
 */
export async function sampleHeap(page, intervalMs = 250) {
  const cdp = await page.context().newCDPSession(page);
  const workers = new Map();
  const pending = new Map();
  let id = 0;
  cdp.on("Target.attachedToTarget", (e) => {
    if (e.targetInfo.type === "worker") workers.set(e.sessionId, e.targetInfo);
  });
  cdp.on("Target.detachedFromTarget", (e) => workers.delete(e.sessionId));
  cdp.on("Target.receivedMessageFromTarget", (e) => {
    const m = JSON.parse(e.message);
    pending.get(m.id)?.(m);
    pending.delete(m.id);
  });
  await cdp.send("Target.setAutoAttach", {
    autoAttach: true,
    waitForDebuggerOnStart: false,
    flatten: false,
  });
  const ask = (sessionId) =>
    new Promise((resolve) => {
      const i = ++id;
      const timer = setTimeout(() => {
        pending.delete(i);
        resolve(undefined);
      }, 5_000);
      pending.set(i, (m) => {
        clearTimeout(timer);
        resolve(m.result);
      });
      cdp.send("Target.sendMessageToTarget", {
        sessionId,
        message: JSON.stringify({ id: i, method: "Runtime.getHeapUsage" }),
      }).catch(() => resolve(undefined));
    });
  const peaks = { page: { used: 0, backing: 0 }, worker: { used: 0, backing: 0 }, samples: 0 };
  const keep = (p, r) => {
    if (!r) return;
    p.used = Math.max(p.used, r.usedSize ?? 0);
    p.backing = Math.max(p.backing, r.backingStorageSize ?? 0);
  };
  let busy = false;
  const tick = async () => {
    if (busy) return;
    busy = true;
    try {
      keep(peaks.page, await cdp.send("Runtime.getHeapUsage").catch(() => undefined));
      for (const sessionId of [...workers.keys()]) keep(peaks.worker, await ask(sessionId));
      peaks.samples++;
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(tick, intervalMs);
  return {
    workers: () => workers.size,
    async stop() {
      clearInterval(timer);
      await tick();
      await cdp.detach().catch(() => {});
      return peaks;
    },
  };
}
