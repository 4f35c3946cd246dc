import { ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { WebGpuEngine } from "../engines/webgpu/engine.ts";
import { MODELS } from "../../test/support/models.ts";
import { HOST_ENGINES } from "./host_engines.ts";

const fortune = MODELS.find((m) => m.name === "fortune")!.dir.pathname;

Deno.test("a host's webgpu engine takes HostOptions.kernelPaths (absent: the adapter's default)", async () => {
  const model = { kind: "dir" as const, path: fortune, name: "fortune" };
  for (const kernelPaths of ["gpu", "cpu", undefined] as const) {
    const hosted = await HOST_ENGINES.webgpu(
      { model, ...(kernelPaths ? { kernelPaths } : {}) },
      dirFiles(fortune),
      () => {
        throw new Error("no other model is opened");
      },
    );
    ok(hosted.engine instanceof WebGpuEngine);
    equal((hosted.engine as WebGpuEngine).options.kernelPaths, kernelPaths);
  }
});
