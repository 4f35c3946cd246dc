/**
 * Engines the Deno CLIs can name: `webgpu` (a checkpoint directory or a GGUF file, on the GPU
 * Deno finds) and `worker` (the same engine in a Deno Worker behind comlink).
 */
import { registerEngine } from "../../conformance/engines.ts";
import { WebGpuEngine } from "../../engines/webgpu/engine.ts";
import { dirFiles } from "./file_source.ts";
import { modelName } from "../../model/source.ts";
import { WorkerEngine } from "../../worker/client.ts";

const DEFAULT_MODEL = new URL("../../../models/fortune/", import.meta.url).pathname;

registerEngine("webgpu", (options) => {
  const dir = options.model ?? DEFAULT_MODEL;
  const name = modelName(dir);
  return () =>
    new WebGpuEngine({ files: dirFiles(dir), name, kvBlocks: Number(options["kv-blocks"] ?? 256) });
});

registerEngine("worker", (options) => {
  const dir = options.model ?? DEFAULT_MODEL;
  const name = modelName(dir);
  return () =>
    new WorkerEngine(
      () => new Worker(new URL("./worker.ts", import.meta.url), { type: "module" }),
      {
        model: { kind: "dir", path: dir, name },
        kvBlocks: Number(options["kv-blocks"] ?? 256),
      },
    );
});
