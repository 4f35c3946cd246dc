/**
 * Kiln: LLM inference on WebGPU, for an app that embeds it (a web page, or a Deno program).
 *
 * `openModel` starts a model in a worker and returns a `KilnModel`: `chat.completions`,
 * `completions` and `responses` as the `openai` client has them, plus the model's metrics. The
 * browser's model store (`cachedModels`, `deleteCachedModel`, ...) and model sources
 * (`urlFiles`, `fileListFiles`) are here too; everything else these names mention is exported
 * for its type. This is a stable entry point, as are `@kiln/kiln/contract`,
 * `@kiln/kiln/conformance`, `@kiln/kiln/metrics` and `@kiln/kiln/engines/mock` (see
 * docs/api.md); `@kiln/kiln/internal` holds the rest and may change in any release.
 *
 * ```ts
 * import { openModel } from "@kiln/kiln";
 *
 * const model = await openModel({ model: "https://example.com/models/fortune/" });
 * const answer = await model.completions.create({ prompt: "You will", max_tokens: 16 });
 * console.log(answer.choices[0]?.text);
 * await model.close();
 * ```
 * @module
 */
export { EngineError } from "./contract/mod.ts";
export { type ExecutionProvider, type OrtEngineOptions } from "./engines/ort/mod.ts";
export {
  type DraftModelOptions,
  type GuidedForcing,
  type GuidedLimits,
  type NgramOptions,
  type SpeculativeOptions,
  type WebGpuEngineOptions,
} from "./engines/webgpu/mod.ts";
export { type Gpu, type GpuCapabilities } from "./gpu/device.ts";
export { type TokenMaskPath } from "./gpu/kernels/token_mask.ts";
export { type PathKind } from "./gpu/paths.ts";
export { RequestMetrics, type RequestStatus, RequestTracker } from "./metrics/mod.ts";
export {
  type ByteSource,
  type DownloadProgress,
  fileListFiles,
  type LoadPhase,
  type LoadProgress,
  type ModelFiles,
  modelName,
  type TransferProgress,
  urlFiles,
} from "./model/mod.ts";
export { type ConversationItem, ResponseStore, type StoredResponse } from "./openai/mod.ts";
export { type UploadOptions, type UploadVia } from "./runtime/staging.ts";
export {
  browserStore,
  type CachedFile,
  type CachedModel,
  cachedModels,
  deleteCachedModel,
  type EntryMeta,
  type EntryStorage,
  type EntryWriter,
  ModelStore,
  storedFiles,
} from "./store/mod.ts";
export {
  type ChatMessage,
  type ChatRenderOptions,
  ChatTemplate,
  type ChatToolCall,
  type EncodeOptions,
  type ModelText,
  type RenderBudget,
  type TextTokenizer,
} from "./text/mod.ts";
export {
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatCompletionMessage,
  type ChatCompletionRequest,
  ChatCompletions,
  type ChatCompletionTool,
  type ChatCompletionToolCall,
  type ChatCompletionToolCallDelta,
  type Completion,
  type CompletionRequest,
  Completions,
  type FinishReasonText,
  type GenerateOptions,
  type HostEngineKind,
  type HostOptions,
  type HostStats,
  KilnModel,
  type Liveness,
  type ModelSpec,
  type OpenAITarget,
  openModel,
  type OpenModelOptions,
  type OrtHostOptions,
  type RequestOptions,
  type RequestStats,
  type ResponseCreateRequest,
  type ResponseFunctionCallItem,
  type ResponseFunctionCallOutputItem,
  type ResponseFunctionTool,
  type ResponseInputItem,
  type ResponseInputMessage,
  type ResponseInputText,
  type ResponseObject,
  type ResponseOutputFunctionCall,
  type ResponseOutputItem,
  type ResponseOutputMessage,
  type ResponseReasoningItem,
  Responses,
  type ResponseStatus,
  type ResponseStreamEvent,
  type ResponseTextFormat,
  type ResponseUsage,
  type SamplingFields,
  type ServiceMessage,
  type ServiceRegistrationLike,
  type ServiceWorkerLike,
  type ServiceWorkerSource,
  type SharedWorkerLike,
  type Sharing,
  type TextPiece,
  type Usage,
  WorkerEngine,
} from "./worker/mod.ts";
export { kilnSharedWorker, kilnWorker } from "./worker/open.ts";
export { HOST_ENGINE_SETTINGS, type HostEngineSettings } from "./worker/protocol.ts";
