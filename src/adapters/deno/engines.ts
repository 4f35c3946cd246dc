/**
 * Engines the Deno CLIs can name: `webgpu` (a checkpoint directory or a GGUF file, on the GPU
 * Deno finds), `worker` (the same engine in a Deno Worker behind comlink) and `ort-worker`
 * (onnxruntime-web's engine on an ONNX export, in a Deno Worker).
 */
import { registerEngine } from "../../conformance/engines.ts";
import { WebGpuEngine } from "../../engines/webgpu/engine.ts";
import { dirFiles } from "./file_source.ts";
import { ortWasmPaths } from "./ort_wasm.ts";
import { modelName } from "../../model/source.ts";
import { WorkerEngine } from "../../worker/client.ts";
import type { OrtHostOptions } from "../../worker/protocol.ts";

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

/** `ort-worker`: onnxruntime-web's engine in a Deno Worker (`--model` an ONNX export folder). */
registerEngine("ort-worker", (options) => {
  const dir = options.model;
  if (dir === undefined) throw new Error("--engine ort-worker needs --model DIR (an ONNX export)");
  const name = modelName(dir);
  const ep = options.ep;
  const ort: OrtHostOptions = {
    wasmPaths: ortWasmPaths(),
    ...(options.variant ? { variant: options.variant } : {}),
    ...(ep === "wasm" || ep === "webgpu" ? { executionProvider: ep } : {}),
  };
  return () =>
    new WorkerEngine(
      () => new Worker(new URL("./worker.ts", import.meta.url), { type: "module" }),
      { model: { kind: "dir", path: dir, name }, engine: "ort", ort },
    );
});
