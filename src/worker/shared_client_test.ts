import { ok, rejects, strictEqual as equal } from "node:assert/strict";
import * as Comlink from "comlink";
import { RequestContext } from "../contract/engine.ts";
import { EngineError } from "../contract/errors.ts";
import { specFiles } from "../adapters/deno/file_source.ts";
import { WebGpuEngine } from "../engines/webgpu/engine.ts";
import { rangeServer } from "../../test/support/range_server.ts";
import { WorkerEngine } from "./client.ts";
import { openModel } from "./open.ts";
import { installErrorTransfer } from "./protocol.ts";
import {
  connectShared,
  holdLock,
  pageLocks,
  portWorker,
  type SharedWorkerLike,
} from "./shared_client.ts";
import { serveTab, SharedEngineHost } from "./shared_host.ts";
import { SHARED_LOST } from "./shared_tab.ts";
import { FORTUNE, request } from "../../test/support/fortune_engine.ts";
import { watch } from "../../test/support/streams.ts";
import { checkTwoModelsShare } from "../../test/support/shared_models.ts";

/**
 * A stand-in for Kiln's SharedWorker in this thread: each `make()` is a page's `new
 * SharedWorker()`, connecting a session of `shared` as the worker's `connect` event would.
 */
function fakeSharedWorker(shared: SharedEngineHost) {
  const ports: MessagePort[] = [];
  const make = (): SharedWorkerLike => {
    installErrorTransfer();
    const { port1, port2 } = new MessageChannel();
    const tab = shared.connect((e) => port1.postMessage({ [SHARED_LOST]: e.message }));
    Comlink.expose(tab, port1);
    ports.push(port1, port2);
    return Object.assign(new EventTarget(), { port: port2 });
  };
  return { make, close: () => ports.forEach((p) => p.close()) };
}

/** Run `fn` with a `SharedWorker` global (Deno has none), as a browser page would have. */
async function withSharedWorkerGlobal<T>(fn: () => Promise<T>): Promise<T> {
  Object.defineProperty(globalThis, "SharedWorker", { value: class {}, configurable: true });
  try {
    return await fn();
  } finally {
    delete (globalThis as { SharedWorker?: unknown }).SharedWorker;
  }
}

Deno.test("connectShared: no SharedWorker, or one without WebGPU, means no sharing (the page runs its own worker)", async () => {
  const shared = new SharedEngineHost(specFiles, { webgpu: () => Promise.resolve(false) });
  const fake = fakeSharedWorker(shared);
  try {
    equal(await connectShared(fake.make), undefined, "Deno has no SharedWorker");
    equal(shared.tabs, 0, "nothing connected");
    await withSharedWorkerGlobal(async () => {
      equal(await connectShared(fake.make), undefined, "a shared worker without WebGPU");
    });
    equal(shared.tabs, 0, "it connected, then detached");
  } finally {
    fake.close();
    await shared.close();
  }
});

Deno.test("openModel({ share: true }) runs on the shared host: a second model of the same URL joins the first's engine", async () => {
  const server = rangeServer(FORTUNE);
  const shared = new SharedEngineHost(specFiles, { graceMs: 10 });
  const fake = fakeSharedWorker(shared);
  try {
    await withSharedWorkerGlobal(async () => {
      const open = () =>
        openModel({
          model: server.base,
          share: true,
          makeSharedWorker: fake.make,
          engine: { kvBlocks: 32 },
        });
      await checkTwoModelsShare(open, "origin", shared);
    });
  } finally {
    fake.close();
    await shared.close();
    await server.shutdown();
  }
});

Deno.test("a shared engine's device lost: every tab's WorkerEngine dies with Disconnected, and the next start loads again", async () => {
  const shared = new SharedEngineHost(specFiles, { graceMs: 10 });
  const fake = fakeSharedWorker(shared);
  const options = { model: { kind: "dir" as const, path: FORTUNE, name: "fortune" }, kvBlocks: 16 };
  const engines = [0, 1].map(() => new WorkerEngine(() => portWorker(fake.make().port), options));
  try {
    await Promise.all(engines.map((e) => e.start(0n)));
    const deaths = engines.map((e) => new Promise<EngineError>((r) => e.onDeath(r)));
    const tab = shared.connect();
    await tab.start(options, 0n);
    equal(shared.loads, 1, "the third tab joined");
    const engine = tab.engine;
    ok(engine instanceof WebGpuEngine);
    engine.gpu!.device.destroy();
    for (const d of await Promise.all(deaths)) {
      ok(d instanceof EngineError && d.type === "Disconnected", String(d));
      ok(/device lost/i.test(d.message), d.message);
    }
    equal(shared.engines, 0, "the lost engine is forgotten");
    const again = shared.connect();
    await again.start(options, 0n);
    equal(shared.loads, 2, "a next start loads again");
    await again.cleanup();
    await tab.cleanup();
  } finally {
    for (const e of engines) await e.cleanup();
    fake.close();
    await shared.close();
  }
});

const fortune = { model: { kind: "dir" as const, path: FORTUNE, name: "fortune" }, kvBlocks: 64 };

/** A request long enough to be mid-stream whenever the test acts. */
const long = (i: number) => request([256, 65 + i], { stop_conditions: { max_tokens: 900 } });

/** Whether `err` is the `Disconnected` error of a shared host that ended for `why`. */
function hostEnded(err: unknown, why: RegExp): boolean {
  ok(err instanceof EngineError && err.type === "Disconnected", String(err));
  ok(/its shared host ended/.test(err.message) && why.test(err.message), err.message);
  return true;
}

Deno.test("a shared host's worker killed mid-stream: the tabs' streams end with Disconnected at once (not at the 30 s heartbeat); later calls are refused with the same error", async () => {
  const host = new Worker(new URL("../../test/support/shared_host_worker.ts", import.meta.url), {
    type: "module",
  });
  const connect = () => {
    const { port1, port2 } = new MessageChannel();
    host.postMessage(null, [port2]);
    return portWorker(port1, { locks: pageLocks() });
  };
  // The default liveness (30 s): only the port or the host's lifetime lock can tell in time.
  const tabs = [0, 1].map(() => new WorkerEngine(connect, fortune));
  try {
    await Promise.all(tabs.map((e) => e.start(0n)));
    const streams = tabs.map((e, i) => watch(e.generate(long(i), new RequestContext())));
    await Promise.all(streams.map((s) => s.first));
    const t0 = performance.now();
    host.terminate();
    const errors = await Promise.all(streams.map((s) => s.done.then(() => undefined, (e) => e)));
    const ms = performance.now() - t0;
    ok(ms < 2000, `streams ended ${ms.toFixed(0)} ms after the kill`);
    for (const [i, e] of tabs.entries()) {
      // Deno fires the port's close event here, or the lock is granted first: either will do.
      hostEnded(errors[i], /connection closed|lifetime lock released/);
      await rejects(watch(e.generate(long(0), new RequestContext())).done, (err) => {
        equal((err as EngineError).message, errors[i].message, "the stream's error");
        return hostEnded(err, /./);
      });
    }
  } finally {
    for (const e of tabs) await e.cleanup();
    host.terminate();
  }
});

Deno.test("portWorker hears its host end three ways, each ending a stream with Disconnected at once: its lifetime lock granted, its port's close event, the SharedWorker's error (heard by a listener added later too)", async () => {
  const shared = new SharedEngineHost(specFiles);
  const locks = pageLocks()!;
  installErrorTransfer();
  /** A tab of `shared` mid-stream; `end` ends its host one way. */
  async function tab(end: "lock" | "close" | "error") {
    const { port1, port2 } = new MessageChannel();
    // This test holds the host's lifetime lock, standing in for the host's worker.
    const name = `kiln-host-${crypto.randomUUID()}`;
    const release = await holdLock(locks, name);
    serveTab(shared, port1, Promise.resolve(name));
    const errors = new EventTarget();
    let released = 0;
    const engine = new WorkerEngine(
      () => portWorker(port2, { errors, locks, onTerminate: () => released++ }),
      fortune,
    );
    await engine.start(0n);
    const stream = watch(engine.generate(long(0), new RequestContext()));
    await stream.first;
    const t0 = performance.now();
    if (end === "lock") release();
    // What a browser with the event does when the host's worker goes (Chromium 156: only with
    // the MessagePortCloseEvent feature; Deno when a Worker holding the other port ends).
    if (end === "close") port2.dispatchEvent(new Event("close"));
    if (end === "error") errors.dispatchEvent(new ErrorEvent("error", { message: "it failed" }));
    const why = { lock: /lifetime lock/, close: /connection closed/, error: /it failed/ }[end];
    await rejects(stream.done, (e) => hostEnded(e, why));
    const ms = performance.now() - t0;
    ok(ms < 1000, `${end}: the stream ended ${ms.toFixed(0)} ms after`);
    await rejects(
      watch(engine.generate(long(1), new RequestContext())).done,
      (e) => hostEnded(e, why),
    );
    equal(released, 1, "the dead engine terminated its endpoint: the page's lock released");
    await engine.cleanup();
    release();
    port1.close();
  }
  try {
    await tab("lock");
    await tab("close");
    await tab("error");

    // A connection whose shared worker failed before anyone listened: a later listener hears it.
    const errors = new EventTarget();
    const late = portWorker(new MessageChannel().port1, { errors });
    errors.dispatchEvent(new ErrorEvent("error", { message: "script failed" }));
    const heard = await new Promise<ErrorEvent>((r) =>
      late.addEventListener("error", (e) => r(e as ErrorEvent))
    );
    ok(/script failed/.test(heard.message), heard.message);
    late.terminate();
  } finally {
    await shared.close();
  }
});
