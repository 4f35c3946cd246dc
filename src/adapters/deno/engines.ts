/** Engines the Deno CLIs can name: `webgpu` (a checkpoint directory on the GPU Deno finds). */
import { registerEngine } from "../../conformance/engines.ts";
import { WebGpuEngine } from "../../engines/webgpu/engine.ts";
import { dirFiles } from "./file_source.ts";

const DEFAULT_MODEL = new URL("../../../models/fortune/", import.meta.url).pathname;

registerEngine("webgpu", (options) => {
  const dir = options.model ?? DEFAULT_MODEL;
  const name = dir.replace(/\/+$/, "").split("/").pop() ?? "model";
  return () =>
    new WebGpuEngine({ files: dirFiles(dir), name, kvBlocks: Number(options["kv-blocks"] ?? 256) });
});
