/**
 * What crosses the worker boundary besides comlink's calls: the model to load (chosen by the
 * caller, so nothing inside detects its runtime), and the messages of one request's stream
 * port (batches of chunks, never one round trip per token).
 */
import * as Comlink from "comlink";
import { EngineError, isSerializedError, type SerializedError } from "../contract/errors.ts";
import type { LLMEngineOutput } from "../contract/types.ts";
import type { RequestStats } from "../engines/live_requests.ts";
import type { SpeculationCounts, SpeculativeOptions } from "../engines/speculation.ts";
import type { WebGpuEngineOptions } from "../engines/webgpu/options.ts";
import type { OrtEngineOptions } from "../engines/ort/engine.ts";
import type { EngineLoad } from "../metrics/router_gauges.ts";

/** The model a worker loads, named by how its files are reached. */
export type ModelSpec =
  /** A checkpoint directory on disk (Deno workers). */
  | { kind: "dir"; path: string; name: string }
  /**
   * A checkpoint under a base URL (browsers; HF `resolve/main` layouts), kept in the runtime's
   * model store (OPFS, a cache directory) unless `cache` is false.
   */
  | { kind: "url"; base: string; name: string; cache?: boolean }
  /** Checkpoint files picked, dropped or fetched in a page (`File`s are structured-cloneable). */
  | { kind: "files"; files: File[]; name: string };

/** Which engine a worker's host builds (default `webgpu`: Kiln's own kernels). */
export type HostEngineKind = "webgpu" | "ort";

/**
 * Options of the onnxruntime-web engine (`engine: "ort"`), as `OrtEngineOptions` names them; the
 * model is an ONNX export.
 */
export type OrtHostOptions = Pick<OrtEngineOptions, "variant" | "executionProvider" | "wasmPaths">;

/**
 * The engine settings a worker passes on, by name: `WebGpuEngineOptions`' own (which documents
 * them). `servedModelName` and `maxNumSeqs` reach the `ort` engine too; the rest are `webgpu`'s.
 */
export const HOST_ENGINE_SETTINGS = [
  "blockSize",
  "kvBlocks",
  "gpuMemoryBytes",
  "upload",
  "maxNumSeqs",
  "maxNumBatchedTokens",
  "servedModelName",
  "kernelPaths",
] as const;

/** The settings `HOST_ENGINE_SETTINGS` names, typed as `WebGpuEngineOptions` types them. */
export type HostEngineSettings = Pick<WebGpuEngineOptions, typeof HOST_ENGINE_SETTINGS[number]>;

/**
 * What `WorkerEngine` asks its worker to start: the model, which engine, and the engine's
 * settings (`WebGpuEngineOptions`' own, with models named by `ModelSpec` instead of files).
 */
export interface HostOptions extends HostEngineSettings {
  /** The model to load. */
  model: ModelSpec;
  /** Which engine the worker builds (default `webgpu`). */
  engine?: HostEngineKind;
  /** Settings of the `ort` engine. */
  ort?: OrtHostOptions;
  /**
   * `webgpu` engine: speculative decoding (`WebGpuEngineOptions.speculative`); a draft model is
   * named as `model` is, and opened the same way.
   */
  speculative?: SpeculativeOptions<ModelSpec>;
}

/** Messages on a request's port: chunk batches, then `end` or `error`. */
export type StreamMessage =
  | { kind: "chunks"; chunks: LLMEngineOutput[] }
  | { kind: "end" }
  | { kind: "error"; error: SerializedError };

/** Gauge values the worker pushes after each step. */
export interface GaugeValues {
  /** KV blocks in the cache. */
  totalBlocks: number;
  /** Fraction (0 to 1) of blocks in use. */
  usagePercent: number;
  /** Prefix cache hit rate; `undefined` before any lookup. */
  hitRate: number | undefined;
  /** Whether cached prefixes are reused (`webgpu` engine; not for recurrent models). */
  prefixCaching?: boolean;
  /** Speculative decoding's counts so far (`webgpu` engine with `speculative` on). */
  speculation?: SpeculationCounts;
  /** Requests running and waiting, and blocks in use (`webgpu` engine): what routers scrape. */
  load?: EngineLoad;
}

/** What the worker's engine holds now (`WorkerEngine.stats()`). */
export interface HostStats {
  /** Requests the engine admitted, and how they ended (its `stats`). */
  requests: RequestStats;
  /** KV cache blocks (or, for onnxruntime-web's engine, request slots) in use now. */
  usedBlocks: number;
  /** KV cache blocks (or request slots) in all. */
  totalBlocks: number;
  /** Forward steps submitted so far (onnxruntime-web's engine: session runs). */
  steps: number;
  /** Request streams the host has open now (0 once every request has ended or been aborted). */
  streams: number;
}

let installed = false;

/**
 * Make comlink carry EngineErrors with their type, message, stack and cause (its default
 * handler keeps only name, message and stack). Call in both the worker and the main thread.
 */
export function installErrorTransfer(): void {
  if (installed) return;
  installed = true;
  const base = Comlink.transferHandlers.get("throw")!;
  Comlink.transferHandlers.set("throw", {
    canHandle: base.canHandle,
    serialize(value: unknown) {
      const err = (value as { value: unknown }).value;
      if (err instanceof EngineError) return [{ isEngineError: true, value: err.toJSON() }, []];
      return base.serialize(value);
    },
    deserialize(data: unknown) {
      const d = data as { isEngineError?: boolean; value?: unknown };
      if (d?.isEngineError && isSerializedError(d.value)) throw EngineError.fromJSON(d.value);
      return base.deserialize(data);
    },
  });
}
