import {
  deepStrictEqual as deepEqual,
  ok,
  rejects,
  strictEqual as equal,
} from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { specFiles } from "../adapters/deno/file_source.ts";
import { rangeServer } from "../../test/support/range_server.ts";
import { openModel } from "./open.ts";
import { connectService, type ServiceRegistrationLike } from "./service_client.ts";
import { type ServiceMessage, serviceMessage } from "./service_host.ts";
import { SharedEngineHost } from "./shared_host.ts";
import { FORTUNE } from "../../test/support/fortune_engine.ts";
import { checkTwoModelsShare } from "../../test/support/shared_models.ts";

/**
 * A stand-in for the app's service worker in this thread: its registration's active worker hands
 * each message to `serviceMessage`, as Kiln's service-worker module's `message` listener does.
 */
function fakeRegistration(shared: SharedEngineHost) {
  const seen: ServiceMessage["kiln"][] = [];
  const ports: MessagePort[] = [];
  const reg: ServiceRegistrationLike = {
    active: {
      postMessage(message: ServiceMessage, transfer: Transferable[] = []) {
        seen.push(message.kiln);
        const got = transfer.filter((p): p is MessagePort => p instanceof MessagePort);
        ports.push(...got);
        // A message event is dispatched later, not within postMessage.
        queueMicrotask(() => serviceMessage(shared, structuredClone(message), got));
      },
    },
  };
  return { reg, seen, close: () => ports.forEach((p) => p.close()) };
}

Deno.test("serviceMessage: a connect exposes a tab on its port, a heartbeat is Kiln's and does nothing, other messages are not Kiln's", () => {
  const shared = new SharedEngineHost(specFiles);
  const { port1, port2 } = new MessageChannel();
  try {
    equal(serviceMessage(shared, { kiln: "heartbeat" }, []), true);
    equal(serviceMessage(shared, { app: "mine" }, []), false);
    equal(serviceMessage(shared, null, []), false);
    equal(shared.tabs, 0);
    equal(serviceMessage(shared, { kiln: "connect" }, []), true, "no port: nothing to serve");
    equal(shared.tabs, 0);
    equal(serviceMessage(shared, { kiln: "connect" }, [port1]), true);
    equal(shared.tabs, 1, "a tab connected on the port");
  } finally {
    port1.close();
    port2.close();
  }
});

Deno.test("openModel({ share: \"service-worker\" }) runs on the service worker's host: a second model of the same URL joins the first's engine, and each connection beats while open", async () => {
  const server = rangeServer(FORTUNE);
  const shared = new SharedEngineHost(specFiles, { graceMs: 10 });
  const fake = fakeRegistration(shared);
  try {
    const open = () =>
      openModel({
        model: server.base,
        share: "service-worker",
        serviceWorker: fake.reg,
        engine: { kvBlocks: 32 },
      });
    await checkTwoModelsShare(open, "service-worker", shared);
    equal(fake.seen.filter((k) => k === "connect").length, 2);

    // The heartbeat: posted to the worker itself every heartbeatMs, until the connection ends.
    // The interval is the test's own: each tick is one period passing.
    const ticks: (() => void)[] = [];
    const cleared: unknown[] = [];
    const timers = {
      setInterval(beat: () => void, ms: number) {
        equal(ms, 20, "every heartbeatMs");
        ticks.push(beat);
        return `beat ${ticks.length}`;
      },
      clearInterval: (id: unknown) => void cleared.push(id),
    };
    const worker = await connectService(fake.reg, { heartbeatMs: 20, timers });
    ok(worker, "connected");
    equal(ticks.length, 1, "one heartbeat interval per connection");
    const beats = () => fake.seen.filter((k) => k === "heartbeat").length;
    const t0 = beats();
    for (let i = 0; i < 3; i++) ticks[0]!();
    equal(beats() - t0, 3, "one heartbeat per period");
    deepEqual(cleared, [], "not stopped while open");
    worker.terminate();
    deepEqual(cleared, ["beat 1"], "the heartbeat stopped once the connection ended");
  } finally {
    fake.close();
    await shared.close();
    await server.shutdown();
  }
});

Deno.test('openModel: share "service-worker" without a service worker, or an unknown share, is InvalidArgument; connectService finds no host for a script URL with no registration (Deno has none) or no active worker, so the page runs its own', async () => {
  for (
    const [options, field] of [
      [{ share: "service-worker" as const }, "serviceWorker"],
      [{ share: "yes" as unknown as boolean }, "share"],
    ] as const
  ) {
    await rejects(
      openModel({ model: "http://127.0.0.1:9/m/", ...options }),
      (e: unknown) =>
        e instanceof EngineError && e.type === "InvalidArgument" &&
        e.message.startsWith(`${field}:`),
    );
  }
  equal(await connectService("http://127.0.0.1:9/sw.js"), undefined, "no registration");
  equal(await connectService({ active: null }), undefined, "no active worker");
});
