/**
 * WGSL sources live in `shaders/*.wgsl`, one kernel family per file, with shared fragments in
 * `shaders/lib/` and per-format decoders in `shaders/formats/` that kernels import
 * (`shader_compose.ts`). A shader is named by its variant string (`logits`, or
 * `product/matvec:format=q4_k`); files are fetched once (file: URLs under Deno, http under a
 * browser or Vite), each variant composed once and compiled once per device: every compute
 * pipeline Kiln dispatches comes from `computePipeline`'s per-device cache, keyed by the variant,
 * which an engine fills while it starts (see `engines/webgpu/warmup.ts`).
 */

import { memoryLedger } from "./memory_ledger.ts";
import { composeShader } from "./shader_compose.ts";
import { loadShaderFile } from "./shader_text.ts";

/** Memoise an async function of a string; a rejected result is forgotten (the next call retries). */
function cached(f: (key: string) => Promise<string>): (key: string) => Promise<string> {
  const cache = new Map<string, Promise<string>>();
  return (key) => {
    let v = cache.get(key);
    if (v === undefined) {
      v = f(key);
      v.catch(() => cache.delete(key));
      cache.set(key, v);
    }
    return v;
  };
}

/** The text of `shaders/<path>`, fetched once. */
export const shaderFile: (path: string) => Promise<string> = cached(loadShaderFile);

/** The composed WGSL of a shader variant (`shaders/<name>.wgsl` with its imports). */
export const shaderSource: (variant: string) => Promise<string> = cached((variant) =>
  composeShader(variant, shaderFile)
);

const modules = new WeakMap<GPUDevice, Map<string, GPUShaderModule>>();
const pipelines = new WeakMap<GPUDevice, Map<string, Promise<GPUComputePipeline>>>();

/** Hears a device's pipeline compilations: settled so far, asked for so far, the one that settled. */
export type PipelineListener = (settled: number, requested: number, label: string) => void;

interface Tally {
  requested: number;
  settled: number;
  listeners: Set<PipelineListener>;
}
const tallies = new WeakMap<GPUDevice, Tally>();

function tally(device: GPUDevice): Tally {
  let t = tallies.get(device);
  if (t === undefined) tallies.set(device, t = { requested: 0, settled: 0, listeners: new Set() });
  return t;
}

/**
 * Pipelines this module has asked `device` to compile (each once: later calls hit the cache) and
 * how many of them have compiled or failed so far.
 */
export function pipelineCounts(device: GPUDevice): { requested: number; settled: number } {
  const { requested, settled } = tally(device);
  return { requested, settled };
}

/**
 * Call `listener` each time a pipeline compilation on `device` settles (load progress while an
 * engine warms up); returns the function that stops it.
 */
export function watchPipelines(device: GPUDevice, listener: PipelineListener): () => void {
  const t = tally(device);
  t.listeners.add(listener);
  return () => t.listeners.delete(listener);
}

async function shaderModule(device: GPUDevice, name: string): Promise<GPUShaderModule> {
  let perDevice = modules.get(device);
  if (perDevice === undefined) modules.set(device, perDevice = new Map());
  let module = perDevice.get(name);
  if (module === undefined) {
    module = device.createShaderModule({ label: `kiln:${name}`, code: await shaderSource(name) });
    perDevice.set(name, module);
  }
  return module;
}

/**
 * A compute pipeline for `entryPoint` of the shader variant `name` (`shaders/<name>.wgsl`, or a
 * composed `file:param=value` variant) with the given `override` constants, cached per device
 * (layout `auto`).
 */
export function computePipeline(
  device: GPUDevice,
  name: string,
  entryPoint: string,
  constants: Record<string, number> = {},
): Promise<GPUComputePipeline> {
  let perDevice = pipelines.get(device);
  if (perDevice === undefined) pipelines.set(device, perDevice = new Map());
  const keyed = Object.keys(constants).sort().map((k) => `${k}=${constants[k]}`).join(",");
  const key = `${name}:${entryPoint}:${keyed}`;
  let pipeline = perDevice.get(key);
  if (pipeline === undefined) {
    // Asynchronous creation: the implementation may compile several at once, off this thread.
    pipeline = shaderModule(device, name).then((module) =>
      device.createComputePipelineAsync({
        label: `kiln:${key}`,
        layout: "auto",
        compute: { module, entryPoint, constants },
      })
    );
    const t = tally(device);
    t.requested++;
    memoryLedger(device).pipelines++;
    const settle = () => {
      t.settled++;
      for (const listener of t.listeners) listener(t.settled, t.requested, key);
    };
    pipeline.then(settle, () => {
      perDevice.delete(key);
      settle();
    });
    perDevice.set(key, pipeline);
  }
  return pipeline;
}
