import { equal, ok } from "node:assert/strict";
import * as Comlink from "comlink";
import { EngineError } from "../contract/errors.ts";
import { specFiles } from "../adapters/deno/file_source.ts";
import { WebGpuEngine } from "../engines/webgpu/engine.ts";
import { rangeServer } from "../../test/support/range_server.ts";
import { WorkerEngine } from "./client.ts";
import { openModel } from "./open.ts";
import { installErrorTransfer } from "./protocol.ts";
import { connectShared, portWorker, type SharedWorkerLike } from "./shared_client.ts";
import { SharedEngineHost } from "./shared_host.ts";
import { SHARED_LOST } from "./shared_tab.ts";
import { FORTUNE } from "../../test/support/fortune_engine.ts";
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
