/**
 * What crosses the worker boundary besides comlink's calls: the model to load (chosen by the
 * caller, so nothing inside detects its runtime), and the messages of one request's stream
 * port (batches of chunks, never one round trip per token).
 */
import * as Comlink from "comlink";
import { EngineError, isSerializedError, type SerializedError } from "../contract/errors.ts";
import type { LLMEngineOutput } from "../contract/types.ts";

export type ModelSpec =
  /** A checkpoint directory on disk (Deno workers). */
  | { kind: "dir"; path: string; name: string }
  /** A checkpoint under a base URL (browsers; HF `resolve/main` layouts). */
  | { kind: "url"; base: string; name: string }
  /** Checkpoint files picked, dropped or fetched in a page (`File`s are structured-cloneable). */
  | { kind: "files"; files: File[]; name: string };

/** Which engine a worker's host builds (default `webgpu`: Kiln's own kernels). */
export type HostEngineKind = "webgpu" | "ort";

/** Options of the onnxruntime-web engine (`engine: "ort"`); the model is an ONNX export. */
export interface OrtHostOptions {
  /** `model`, `model_fp16`, `model_q4f16`, ...: which `onnx/<variant>.onnx` to run. */
  variant?: string;
  executionProvider?: "webgpu" | "wasm";
  /** Where onnxruntime-web finds its `.wasm` files (`env.wasm.wasmPaths`). */
  wasmPaths?: string;
}

export interface HostOptions {
  model: ModelSpec;
  engine?: HostEngineKind;
  ort?: OrtHostOptions;
  blockSize?: number;
  kvBlocks?: number;
  maxNumSeqs?: number;
  maxNumBatchedTokens?: number;
  servedModelName?: string;
}

/** Messages on a request's port: chunk batches, then `end` or `error`. */
export type StreamMessage =
  | { kind: "chunks"; chunks: LLMEngineOutput[] }
  | { kind: "end" }
  | { kind: "error"; error: SerializedError };

/** Gauge values the worker pushes after each step. */
export interface GaugeValues {
  totalBlocks: number;
  usagePercent: number;
  hitRate: number | undefined;
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
