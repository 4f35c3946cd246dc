import { deepStrictEqual as deepEqual, ok, strictEqual as equal } from "node:assert/strict";
import * as Comlink from "comlink";
import { RequestContext } from "../contract/engine.ts";
import type { LLMEngineOutput } from "../contract/types.ts";
import { specFiles } from "../adapters/deno/file_source.ts";
import { WorkerEngine } from "./client.ts";
import { WebGpuEngine } from "../engines/webgpu/engine.ts";
import { installErrorTransfer, type StreamMessage } from "./protocol.ts";
import { portWorker } from "./shared_client.ts";
import { SharedEngineHost, type SharedHostStats, type TabHost } from "./shared_host.ts";
import { SHARED_LOST } from "./shared_tab.ts";
import { collect, FORTUNE, request } from "../../test/support/fortune_engine.ts";

const options = { model: { kind: "dir" as const, path: FORTUNE, name: "fortune" }, kvBlocks: 64 };

/** Web Locks whose holders a test releases by hand (`gone(name)`: that tab closed). */
function fakeLocks() {
  const waiting = new Map<string, () => Promise<void> | void>();
  return {
    request(name: string, cb: () => Promise<void> | void): Promise<unknown> {
      waiting.set(name, cb);
      return Promise.resolve();
    },
    gone: async (name: string) => await waiting.get(name)?.(),
  };
}

/** A tab: a `WorkerEngine` over comlink on a MessageChannel to a session of `shared`. */
function tabEngine(shared: SharedEngineHost) {
  installErrorTransfer();
  const { port1, port2 } = new MessageChannel();
  const tab = shared.connect((e) => port1.postMessage({ [SHARED_LOST]: e.message }));
  Comlink.expose(tab, port1);
  const engine = new WorkerEngine(() => portWorker(port2), options);
  return { engine, tab, close: () => port1.close() };
}

/** Stream `req` straight into a session (as comlink would), collecting what its port gets. */
function stream(tab: TabHost, id: string, prompt: number[], maxTokens: number) {
  const { port1, port2 } = new MessageChannel();
  const tokens: number[] = [];
  let finish: LLMEngineOutput["finish_reason"];
  let firstToken!: () => void;
  const first = new Promise<void>((r) => (firstToken = r));
  let chunk: (() => void) | undefined;
  const ended = new Promise<void>((resolve) => {
    port1.onmessage = (e: MessageEvent<StreamMessage>) => {
      const m = e.data;
      if (m.kind === "chunks") {
        for (const c of m.chunks) {
          tokens.push(...c.token_ids);
          finish = c.finish_reason ?? finish;
        }
        if (tokens.length > 0) firstToken();
        chunk?.();
      } else {
        firstToken();
        port1.close();
        resolve();
      }
    };
  });
  const req = request(prompt, { stop_conditions: { max_tokens: maxTokens, ignore_eos: true } });
  tab.generate(req, id, port2);
  /** Resolves at the next chunks the stream gets (the engine stepped), or once it ended. */
  const next = () => Promise.race([new Promise<void>((r) => (chunk = r)), ended]);
  return { tokens, first, ended, next, finish: () => finish };
}

/** A grace timer the test runs by hand: `elapse()` is the grace period passing. */
function fakeTimers() {
  const pending = new Map<number, { ms: number; run: () => void }>();
  let next = 0;
  return {
    timers: {
      setTimeout(run: () => void, ms: number) {
        pending.set(++next, { ms, run });
        return next;
      },
      clearTimeout: (id: unknown) => void pending.delete(id as number),
    },
    /** The periods of the timers set and not yet run or cleared. */
    pending: () => [...pending.values()].map((t) => t.ms),
    elapse() {
      const due = [...pending.values()];
      pending.clear();
      for (const t of due) t.run();
    },
  };
}

const ids = (chunks: LLMEngineOutput[]) => chunks.flatMap((c) => c.token_ids);

Deno.test("two tabs of a shared host load the model once and stream their own requests, with the same id", async () => {
  const shared = new SharedEngineHost(specFiles, { graceMs: 10 });
  const a = tabEngine(shared), b = tabEngine(shared);
  try {
    const [ca, cb] = await Promise.all([a.engine.start(0n), b.engine.start(0n)]);
    deepEqual(ca, cb, "the joining tab gets the running engine's config");
    const s = (await a.engine.stats()) as SharedHostStats;
    equal(s.loads, 1, "loaded once");
    equal(s.tabs, 2);
    const req = request([256, 72, 101, 108], {
      stop_conditions: { max_tokens: 12, ignore_eos: true },
    });
    const alone = await collect(a.engine, req, new RequestContext({ requestId: "r" }));
    const [x, y] = await Promise.all([
      collect(a.engine, req, new RequestContext({ requestId: "r" })),
      collect(b.engine, req, new RequestContext({ requestId: "r" })),
    ]);
    equal(alone.ids.length, 12);
    deepEqual(ids(x.chunks), alone.ids, "tab A, concurrent: the single-tab greedy output");
    deepEqual(ids(y.chunks), alone.ids, "tab B, concurrent, same request id");
    equal(((await b.engine.stats()) as SharedHostStats).streams, 0);
  } finally {
    await a.engine.cleanup();
    await b.engine.cleanup();
    a.close();
    b.close();
    await shared.close();
  }
});

Deno.test("a shared host: aborting a tab's request leaves another tab's request of the same id running", async () => {
  const shared = new SharedEngineHost(specFiles, { graceMs: 10 });
  const ta = shared.connect(), tb = shared.connect();
  try {
    await Promise.all([ta.start(options, 0n), tb.start(options, 0n)]);
    const a = stream(ta, "r", [256, 72, 101], 60);
    const b = stream(tb, "r", [256, 72, 101], 60);
    await a.first;
    await ta.abort("r");
    await Promise.all([a.ended, b.ended]);
    equal(a.finish(), "cancelled", "A's request ends cancelled");
    ok(a.tokens.length < 60, `A got ${a.tokens.length} tokens`);
    equal(b.finish(), "length", "B's request of the same id runs to its end");
    equal(b.tokens.length, 60);
  } finally {
    await ta.cleanup();
    await tb.cleanup();
    await shared.close();
  }
});

Deno.test("a shared host: a tab gone mid-stream (its lock granted) is cancelled and its KV freed; the last tab leaving releases the engine after the grace", async () => {
  const locks = fakeLocks();
  const clock = fakeTimers();
  const shared = new SharedEngineHost(specFiles, { graceMs: 200, locks, timers: clock.timers });
  const ta = shared.connect(), tb = shared.connect();
  await ta.attach("lock-a");
  await tb.attach("lock-b");
  try {
    await Promise.all([ta.start(options, 0n), tb.start(options, 0n)]);
    // A holds a long prompt (8+ blocks of 16); B a short one: no shared prefix.
    const longPrompt = Array.from({ length: 130 }, (_, i) => 100 + (i % 50));
    const a = stream(ta, "r", longPrompt, 400);
    const b = stream(tb, "r", [256, 72], 400);
    await Promise.all([a.first, b.first]);
    const before = (await tb.stats())!;
    ok(before.usedBlocks >= 10, `both hold blocks: ${before.usedBlocks}`);
    await locks.gone("lock-a");
    await a.ended;
    equal(a.finish(), "cancelled", "the closed tab's stream is cancelled");
    equal(await ta.stats(), undefined, "the closed tab is detached");
    // Its blocks are freed by the engine's next step; B's stream keeps stepping.
    const bHolds = () => Math.ceil((2 + b.tokens.length + 48) / 16);
    let after = (await tb.stats())!;
    while (after.usedBlocks > 1 + bHolds() && b.finish() === undefined) {
      await b.next();
      after = (await tb.stats())!;
    }
    ok(
      after.usedBlocks <= bHolds(),
      `used ${after.usedBlocks} > B's ${bHolds()} (was ${before.usedBlocks})`,
    );
    equal(after.tabs, 1);
    equal(b.finish(), undefined, "B's stream runs on");
    await b.ended;
    equal(b.finish(), "length");
    equal(b.tokens.length, 400);
    await tb.cleanup();
    equal(shared.engines, 1, "kept for the grace period");
    deepEqual(clock.pending(), [200], "the grace period runs");
    const tc = shared.connect();
    await tc.start(options, 0n);
    equal(shared.loads, 1, "a tab within the grace joins the loaded engine");
    deepEqual(clock.pending(), [], "and the release is called off");
    await tc.cleanup();
    deepEqual(clock.pending(), [200], "the last tab gone: the grace period runs again");
    equal(shared.engines, 1);
    clock.elapse();
    equal(shared.engines, 0, "released once the grace passed with no tab");
    const td = shared.connect();
    await td.start(options, 0n);
    equal(shared.loads, 2, "the next tab loads again");
    await td.cleanup();
  } finally {
    await shared.close();
  }
});

Deno.test("a shared host: a tab's drain waits for its own requests only, and cleanup detaches it alone", async () => {
  const shared = new SharedEngineHost(specFiles, { graceMs: 10 });
  const ta = shared.connect(), tb = shared.connect();
  try {
    await Promise.all([ta.start(options, 0n), tb.start(options, 0n)]);
    const a = stream(ta, "x", [256, 72], 8);
    const b = stream(tb, "y", [256, 72], 200);
    await ta.drain();
    equal((await ta.stats())!.streams, 0, "drain returned once A's own request had ended");
    equal(b.finish(), undefined, "B's request was not waited for");
    await a.ended;
    equal(a.finish(), "length", "A's own request ran to its end");
    const refused = stream(ta, "z", [256], 4);
    await refused.ended;
    equal(refused.tokens.length, 0, "a drained tab admits nothing");
    await ta.cleanup();
    await b.ended;
    equal(b.finish(), "length", "B was neither drained nor cleaned up");
    equal(b.tokens.length, 200);
  } finally {
    await tb.cleanup();
    await shared.close();
  }
});

Deno.test("a shared host: an engine whose only tab left while it loaded is released once loaded", async () => {
  const shared = new SharedEngineHost(specFiles, { graceMs: 10 });
  const ta = shared.connect();
  try {
    const started = ta.start(options, 0n);
    await ta.cleanup();
    await started;
    const engine = ta.engine;
    ok(engine instanceof WebGpuEngine);
    // Its device is destroyed by the engine's cleanup: that, not a wait, ends this test.
    await engine.gpu!.lost;
    equal(shared.engines, 0);
  } finally {
    await shared.close();
  }
});
