/**
 * The engines a worker's host can build, by `HostOptions.engine`: Kiln's `WebGpuEngine`
 * (`webgpu`, the default) and onnxruntime-web (`ort`). Each maker returns the engine with the
 * two hooks the host needs besides `LLMEngine`: the GPU device's loss, and the KV gauges it
 * pushes to the main thread. onnxruntime-web is imported only when `ort` is chosen, so a
 * WebGPU worker never loads it.
 */
import type { LLMEngine } from "../contract/engine.ts";
import type { EngineError } from "../contract/errors.ts";
import { WebGpuEngine } from "../engines/webgpu/engine.ts";
import type { LoadProgress } from "../runtime/gpu_model.ts";
import type { ModelFiles } from "../formats/source.ts";
import {
  type GaugeValues,
  HOST_ENGINE_SETTINGS,
  type HostEngineKind,
  type HostEngineSettings,
  type HostOptions,
  type HostStats,
  type ModelSpec,
} from "./protocol.ts";

/** An engine a host runs, and what it offers besides `LLMEngine`. */
export interface HostedEngine {
  engine: LLMEngine;
  /** After `start`: resolves when the engine's GPU device is lost (the host then fails loudly). */
  deviceLost(): Promise<EngineError> | undefined;
  /** Call `cb` with the KV gauges after every step; false when the engine keeps none. */
  onGauges(cb: (values: GaugeValues) => void): boolean;
  /** The engine's request counts and KV use now (see `HostStats`). */
  stats(): Omit<HostStats, "streams">;
}

/** Build the engine `options` name on `files`; `filesFor` finds any other model's (a draft's). */
export type HostEngineMaker = (
  options: HostOptions,
  files: ModelFiles,
  filesFor: (spec: ModelSpec) => ModelFiles,
  onProgress?: LoadProgress,
) => Promise<HostedEngine>;

/** Settings where 0 is a value (no KV blocks, no memory), not "unset". */
const ZERO_IS_SET: ReadonlySet<string> = new Set(["kvBlocks", "gpuMemoryBytes"]);

/** The settings `o` sets (a 0, "" or false reads as unset, but where `ZERO_IS_SET`). */
function settings(o: HostOptions): HostEngineSettings {
  const out: Record<string, unknown> = {};
  for (const key of HOST_ENGINE_SETTINGS) {
    const v = o[key];
    if (ZERO_IS_SET.has(key) ? v !== undefined : v) out[key] = v;
  }
  return out as HostEngineSettings;
}

const webgpu: HostEngineMaker = (o, files, filesFor, onProgress) => {
  const spec = o.speculative;
  const engine = new WebGpuEngine({
    files,
    name: o.model.name,
    ...settings(o),
    ...(spec
      ? {
        speculative: spec.method === "draft_model"
          ? { ...spec, model: filesFor(spec.model) }
          : spec,
      }
      : {}),
    ...(onProgress ? { onLoadProgress: onProgress } : {}),
  });
  return Promise.resolve({
    engine,
    deviceLost: () => engine.gpu?.lost,
    onGauges: (cb) => {
      engine.onGauges(cb);
      return true;
    },
    stats: () => ({
      requests: { ...engine.stats },
      usedBlocks: engine.usedBlocks,
      totalBlocks: engine.totalBlocks,
      steps: engine.steps.submitted,
    }),
  });
};

const ort: HostEngineMaker = async (o, files) => {
  const { OrtEngine } = await import("../engines/ort/mod.ts");
  const x = o.ort ?? {};
  const engine = new OrtEngine({
    files,
    name: o.model.name,
    ...(o.servedModelName ? { servedModelName: o.servedModelName } : {}),
    ...(o.maxNumSeqs ? { maxNumSeqs: o.maxNumSeqs } : {}),
    ...(x.variant ? { variant: x.variant } : {}),
    ...(x.executionProvider ? { executionProvider: x.executionProvider } : {}),
    ...(x.wasmPaths ? { wasmPaths: x.wasmPaths } : {}),
  });
  return {
    engine,
    // The device ORT created (WebGPU EP); the wasm EP has none to lose.
    deviceLost: () => engine.lost,
    onGauges: (cb) => {
      engine.onGauges(cb);
      return true;
    },
    stats: () => ({
      requests: { ...engine.stats },
      usedBlocks: engine.usedSlots,
      totalBlocks: engine.options.maxNumSeqs ?? 16,
      steps: engine.steps.runs,
    }),
  };
};

export const HOST_ENGINES: Record<HostEngineKind, HostEngineMaker> = { webgpu, ort };
