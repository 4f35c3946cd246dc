/**
 * WGSL sources live in `shaders/*.wgsl`, one kernel family per file. They are fetched once
 * (file: URLs under Deno, http under a browser or Vite) and compiled once per device.
 */

import { loadShaderText } from "./shader_text.ts";

const sources = new Map<string, Promise<string>>();

/** The text of `shaders/<name>.wgsl`. */
export function shaderSource(name: string): Promise<string> {
  let src = sources.get(name);
  if (src === undefined) {
    src = loadShaderText(name);
    src.catch(() => sources.delete(name));
    sources.set(name, src);
  }
  return src;
}

const modules = new WeakMap<GPUDevice, Map<string, GPUShaderModule>>();
const pipelines = new WeakMap<GPUDevice, Map<string, Promise<GPUComputePipeline>>>();

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
 * A compute pipeline for `entryPoint` of `shaders/<name>.wgsl` with the given `override`
 * constants, cached per device (layout `auto`).
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
    pipeline = shaderModule(device, name).then((module) =>
      device.createComputePipelineAsync({
        label: `kiln:${key}`,
        layout: "auto",
        compute: { module, entryPoint, constants },
      })
    );
    pipeline.catch(() => perDevice.delete(key));
    perDevice.set(key, pipeline);
  }
  return pipeline;
}
