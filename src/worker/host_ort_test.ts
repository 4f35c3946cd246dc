/**
 * The ort engine's device loss reaches the worker's host as WebGpuEngine's does. A file of its
 * own: it destroys the device onnxruntime-web created, which its module keeps for the isolate.
 */
import { ok } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { specFiles } from "../adapters/deno/file_source.ts";
import { OrtEngine } from "../engines/ort/engine.ts";
import { onnxFortune } from "../../test/support/onnx_fortune.ts";
import { EngineHost } from "./host.ts";

Deno.test("a worker's host running the ort engine reports ORT's GPU device lost", async () => {
  let lost: EngineError | undefined;
  const host = new EngineHost(specFiles, (e) => (lost = e));
  const path = await onnxFortune();
  await host.start({
    model: { kind: "dir", path, name: "fortune" },
    engine: "ort",
    ort: { variant: "model", executionProvider: "webgpu" },
  }, 0n);
  try {
    const engine = host.engine;
    ok(engine instanceof OrtEngine && engine.device !== undefined, "ort on the WebGPU EP");
    engine.device.destroy();
    // The host reports from its reaction to the engine's `lost`, registered at start(): by the
    // time this later one runs, it has reported.
    await engine.lost;
    ok(lost instanceof EngineError && lost.type === "EngineShutdown", String(lost));
    ok(/device lost/i.test(lost.message), lost.message);
  } finally {
    await host.cleanup();
  }
});
