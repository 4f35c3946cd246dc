import { ok, rejects } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { specFiles } from "../adapters/deno/file_source.ts";
import { EngineHost } from "./host.ts";
import { WebGpuEngine } from "../engines/webgpu/engine.ts";
import { MODELS } from "../../test/support/models.ts";

const fortune = MODELS.find((m) => m.name === "fortune")!.dir.pathname;

Deno.test("a worker's host reports its GPU device lost (in a worker: an uncaught error, so the owner replaces it)", async () => {
  let lost: EngineError | undefined;
  const host = new EngineHost(specFiles, (e) => (lost = e));
  await host.start({ model: { kind: "dir", path: fortune, name: "fortune" }, kvBlocks: 16 }, 0n);
  try {
    const engine = host.engine;
    ok(engine instanceof WebGpuEngine, "the default engine is Kiln's own");
    const gpu = engine.gpu!;
    gpu.device.destroy();
    // The host reports from its own reaction to `gpu.lost`, registered at start(): by the time
    // this later one runs, it has reported (the point the cleanup test below checks at).
    await gpu.lost;
    ok(lost instanceof EngineError && lost.type === "EngineShutdown", String(lost));
    ok(/device lost/i.test(lost.message), lost.message);
  } finally {
    await host.cleanup();
  }
});

Deno.test("a host refuses an engine it does not know, with a typed error", async () => {
  const host = new EngineHost(specFiles);
  const options = {
    model: { kind: "dir" as const, path: fortune, name: "fortune" },
    engine: "tensorrt" as "webgpu",
  };
  await rejects(
    host.start(options, 0n),
    (e) => e instanceof EngineError && e.type === "InvalidArgument",
  );
  await host.cleanup();
});

Deno.test("a host's own cleanup (which destroys the device) is not reported as a device loss", async () => {
  let lost: EngineError | undefined;
  const host = new EngineHost(specFiles, (e) => (lost = e));
  await host.start({ model: { kind: "dir", path: fortune, name: "fortune" }, kvBlocks: 16 }, 0n);
  const engine = host.engine;
  ok(engine instanceof WebGpuEngine);
  const gpu = engine.gpu!;
  await host.cleanup();
  // The engine destroyed its device. The host's reaction to `gpu.lost` (registered at start())
  // has run before this later one: had it reported, it would have by now (see the test above).
  await gpu.lost;
  ok(lost === undefined, `reported: ${lost}`);
});
