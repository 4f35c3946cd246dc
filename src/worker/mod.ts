/**
 * The engine in a Web Worker (or a Deno Worker) behind comlink, and the main-thread
 * `WorkerEngine` with the same `LLMEngine` interface.
 * @module
 */
export { type Liveness, WorkerEngine } from "./client.ts";
export { EngineHost, exposeHost, type FilesFor } from "./host.ts";
export type {
  GaugeValues,
  HostEngineKind,
  HostOptions,
  HostStats,
  ModelSpec,
  OrtHostOptions,
} from "./protocol.ts";
export type { RequestStats } from "../engines/live_requests.ts";
export {
  type GenerateOptions,
  KilnModel,
  kilnWorker,
  openModel,
  type OpenModelOptions,
} from "./open.ts";
export * from "../openai/completions.ts";
