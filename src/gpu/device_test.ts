import { ok, rejects, strictEqual as equal } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { acquireGpu, runtimeData } from "./device.ts";
import { KERNEL_PATHS, kernelPaths, PATH_KINDS, type PathKind } from "./paths.ts";

Deno.test("acquireGpu reports capabilities and turns device loss into an EngineError", async () => {
  const gpu = await acquireGpu({ label: "kiln-device-test" });
  ok(gpu.caps.adapter.length > 0);
  ok(gpu.caps.maxStorageBufferBindingSize >= 128 * 1024 * 1024);
  equal(gpu.caps.f16, gpu.device.features.has("shader-f16"));
  equal(gpu.caps.subgroups, gpu.device.features.has("subgroups"));
  gpu.device.destroy();
  const lost = await gpu.lost;
  ok(lost instanceof EngineError);
  equal(lost.type, "EngineShutdown");
  ok(lost.message.includes("GPU device lost"));
});

Deno.test("optional features can be turned off to exercise the fallback paths", async () => {
  const gpu = await acquireGpu({ disable: ["shader-f16", "subgroups", "timestamp-query"] });
  equal(gpu.caps.f16, false);
  equal(gpu.caps.subgroups, false);
  equal(gpu.caps.timestamps, false);
  gpu.device.destroy();
});

Deno.test("no WebGPU at all: a CannotConnect error naming what to install or enable", async () => {
  const original = Object.getOwnPropertyDescriptor(globalThis, "navigator");
  Object.defineProperty(globalThis, "navigator", { value: {}, configurable: true });
  try {
    await rejects(acquireGpu(), (e: unknown) => {
      ok(e instanceof EngineError && e.type === "CannotConnect", String(e));
      ok(
        e.message.includes("mesa-vulkan-drivers") && e.message.includes("enable-unsafe-webgpu"),
        e.message,
      );
      return true;
    });
    Object.defineProperty(globalThis, "navigator", {
      value: { gpu: { requestAdapter: () => Promise.resolve(null) } },
      configurable: true,
    });
    await rejects(
      acquireGpu(),
      (e: unknown) => e instanceof EngineError && e.message.includes("no adapter"),
    );
  } finally {
    if (original) Object.defineProperty(globalThis, "navigator", original);
  }
});

Deno.test("kernel paths: the adapter's by default, either kind on request, anything else refused", async () => {
  const auto = await acquireGpu({ label: "kiln-paths-default" });
  equal(auto.caps.paths, auto.caps.cpuAdapter ? "cpu" : "gpu");
  equal(kernelPaths(auto.device), KERNEL_PATHS[auto.caps.paths]);
  equal(runtimeData(auto.caps).kernel_paths, auto.caps.paths);
  auto.device.destroy();
  for (const kind of PATH_KINDS) {
    const gpu = await acquireGpu({ label: `kiln-paths-${kind}`, paths: kind });
    equal(gpu.caps.paths, kind);
    equal(kernelPaths(gpu.device), KERNEL_PATHS[kind]);
    gpu.device.destroy();
  }
  await rejects(
    acquireGpu({ paths: "fast" as PathKind }),
    (e: unknown) =>
      e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes('"fast"'),
  );
});
