/**
 * Engines the Deno CLIs can name: `webgpu` (a checkpoint directory or a GGUF file, on the GPU
 * Deno finds), `worker` (the same engine in a Deno Worker behind comlink), `ort` (an ONNX
 * export on onnxruntime-web; `--variant`, `--ep webgpu|wasm`) and `ort-worker` (that engine in a
 * Deno Worker). Without `--model`, the `ort` engines take fortune's ONNX export where
 * `fortune_onnx.ts` finds one.
 */
import { registerEngine } from "../../conformance/engines.ts";
import { WebGpuEngine } from "../../engines/webgpu/engine.ts";
import { dirFiles } from "./file_source.ts";
import { requireOnnxFortune } from "./fortune_onnx.ts";
import { ortWasmPaths } from "./ort_wasm.ts";
import { modelName } from "../../formats/source.ts";
import { WorkerEngine } from "../../worker/client.ts";
import type { OrtHostOptions } from "../../worker/protocol.ts";
import { OrtEngine } from "../../engines/ort/engine.ts";
import type { PathKind } from "../../gpu/paths.ts";

const DEFAULT_MODEL = new URL("../../../models/fortune/", import.meta.url).pathname;

/** `--kv-blocks N` when given; absent, the engine sizes its cache itself. */
const kvBlocks = (options: Record<string, string>): { kvBlocks?: number } =>
  options["kv-blocks"] === undefined ? {} : { kvBlocks: Number(options["kv-blocks"]) };

/** `kernel-paths` (`KILN_KERNEL_PATHS`) when given; start() refuses anything but cpu or gpu. */
const kernelPaths = (options: Record<string, string>): { kernelPaths?: PathKind } =>
  options["kernel-paths"] === undefined ? {} : { kernelPaths: options["kernel-paths"] as PathKind };

registerEngine("webgpu", (options) => {
  const dir = options.model ?? DEFAULT_MODEL;
  const name = modelName(dir);
  return () =>
    new WebGpuEngine({ files: dirFiles(dir), name, ...kvBlocks(options), ...kernelPaths(options) });
});

registerEngine("worker", (options) => {
  const dir = options.model ?? DEFAULT_MODEL;
  const name = modelName(dir);
  return () =>
    new WorkerEngine(
      () => new Worker(new URL("./worker.ts", import.meta.url), { type: "module" }),
      {
        model: { kind: "dir", path: dir, name },
        ...kvBlocks(options),
        ...kernelPaths(options),
      },
    );
});

registerEngine("ort", (options) => {
  const dir = options.model ?? requireOnnxFortune("ort");
  const name = options.model === undefined ? "fortune" : modelName(dir);
  const ep = options.ep as "webgpu" | "wasm" | undefined; // anything else: start() refuses it
  return () =>
    new OrtEngine({
      files: dirFiles(dir),
      name,
      ...(options.variant === undefined ? {} : { variant: options.variant }),
      ...(ep === undefined ? {} : { executionProvider: ep }),
    });
});

/** `ort-worker`: the `ort` engine in a Deno Worker (`--model` an ONNX export, default fortune's). */
registerEngine("ort-worker", (options) => {
  const dir = options.model ?? requireOnnxFortune("ort-worker");
  const name = options.model === undefined ? "fortune" : modelName(dir);
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
