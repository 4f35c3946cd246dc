/**
 * The engine in a Web Worker (or a Deno Worker) behind comlink, and the main-thread
 * `WorkerEngine` with the same `LLMEngine` interface; `openModel` and, over it, the Prompt API's
 * `LanguageModel` (`KilnLanguageModel`).
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
  kilnSharedWorker,
  kilnWorker,
  openModel,
  type OpenModelOptions,
  type Sharing,
} from "./open.ts";
export {
  bindLanguageModel,
  CreateMonitor,
  installLanguageModel,
  KilnLanguageModel,
} from "./language_model.ts";
export type {
  Availability,
  CreateMonitorCallback,
  CreateMonitorLike,
  KilnLanguageModelAvailabilityOptions,
  KilnLanguageModelCreateOptions,
  KilnLanguageModelOptions,
  KilnModelSource,
  LanguageModelAppendOptions,
  LanguageModelCloneOptions,
  LanguageModelCreateCoreOptions,
  LanguageModelCreateOptions,
  LanguageModelExpected,
  LanguageModelMessage,
  LanguageModelMessageContent,
  LanguageModelMessageRole,
  LanguageModelMessageType,
  LanguageModelMessageValue,
  LanguageModelParams,
  LanguageModelPrompt,
  LanguageModelPromptOptions,
  LanguageModelSamplingMode,
  LanguageModelTool,
} from "./language_model_types.ts";
export {
  exposeSharedHost,
  type GraceTimers,
  type KvEvent,
  type SharedEngine,
  SharedEngineHost,
  type SharedHostOptions,
  type SharedHostStats,
  TabHost,
} from "./shared_host.ts";
export type { TabAttach } from "./shared_tab.ts";
export type { Locks, SharedWorkerLike } from "./shared_client.ts";
export { exposeServiceHost, type ServiceMessage, serviceMessage } from "./service_host.ts";
export type {
  ServiceRegistrationLike,
  ServiceWorkerLike,
  ServiceWorkerSource,
} from "./service_client.ts";
export * from "../openai/completions.ts";
export * from "../openai/responses.ts";
