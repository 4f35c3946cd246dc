/**
 * One call from a model to a running engine on the page: `openModel` starts a `WorkerEngine`
 * (the engine in a module Web Worker shipped with Kiln) for a model URL or picked `File`s, with
 * load progress, and returns a `KilnModel`: `generate` with an `AbortSignal`, the OpenAI-shaped
 * `chat.completions.create`, `completions.create` and `responses.create`, and the engine's
 * metrics as Prometheus text.
 */
import type { EngineConfig } from "../contract/types.ts";
import { shutDown } from "../metrics/engine_lifecycle.ts";
import type { EngineMetrics } from "../contract/metrics/engine_metrics.ts";
import type { Format } from "../contract/metrics/exposition.ts";
import { RequestMetrics } from "../metrics/request_metrics.ts";
import type { LoadProgress } from "../runtime/gpu_model.ts";
import { fileListFiles, ggufEntry, type ModelFiles, modelName } from "../formats/source.ts";
import { startModel } from "../runtime/start.ts";
import { storedFiles } from "../store/browser.ts";
import type { ModelText } from "../text/load.ts";
import { type Liveness, WorkerEngine } from "./client.ts";
import {
  ChatCompletions,
  type CompletionRequest,
  Completions,
  generateText,
  type OpenAITarget,
  type TextPiece,
} from "../openai/completions.ts";
import { Responses } from "../openai/responses.ts";
import type { HostOptions, ModelSpec } from "./protocol.ts";
import { kilnWorker } from "./worker_module.ts";
import { connectShared, type SharedWorkerLike, type Sharing } from "./shared_client.ts";
import { kilnSharedWorker } from "./shared_worker_module.ts";
import { connectService, type ServiceWorkerSource } from "./service_client.ts";
import { EngineError } from "../contract/errors.ts";

export { kilnSharedWorker, kilnWorker, type Sharing };

/** What `openModel` loads, and how. */
export interface OpenModelOptions {
  /**
   * A base URL of an HF-layout checkpoint (`config.json`, `tokenizer.json`,
   * `model.safetensors` or a sharded index), a `.gguf` URL, or the `File`s of either.
   */
  model: string | URL | readonly File[];
  /** The served model name (default: from the URL or the file names). */
  name?: string;
  /**
   * Keep a URL model in the browser's model store (OPFS, else Cache Storage): downloaded once,
   * resumed after a cut, verified, and read from there on the next visit (default true). See
   * `cachedModels` and `deleteCachedModel`.
   */
  cache?: boolean;
  /** Bytes of weights uploaded to the GPU so far, during the load. */
  onProgress?: LoadProgress;
  /** The worker to run the engine in (default: Kiln's browser worker module). */
  makeWorker?: () => Worker;
  /**
   * Share one engine per model with every tab of this origin (default false): the engine runs in
   * Kiln's `SharedWorker`, a tab opening a model another tab has loaded joins it without loading
   * again, and the last tab closing releases it. Where the browser has no `SharedWorker`, or no
   * WebGPU in one, the engine runs in the app's service worker when `serviceWorker` is given,
   * else in the page's own worker; `KilnModel.sharing` says which. `"service-worker"` skips the
   * `SharedWorker` and goes to `serviceWorker` at once (tests; browsers known to need it).
   */
  share?: boolean | "service-worker";
  /** The shared worker to connect to with `share` (default: Kiln's shared worker module). */
  makeSharedWorker?: () => SharedWorkerLike;
  /**
   * The app's service worker running Kiln's service-worker module, the second choice of `share`:
   * its `ServiceWorkerRegistration`, or the URL of the script it registered (`register(url, {
   * type: "module" })`). Kiln does not register it: its URL and scope are the app's.
   */
  serviceWorker?: ServiceWorkerSource;
  /** Engine sizes: KV blocks, block size, batch limits. */
  engine?: Omit<HostOptions, "model">;
  /** Heartbeat timing of the worker (see `WorkerEngine`). */
  liveness?: Liveness;
  /** Labels of the metrics (default namespace `kiln`, component `page`, endpoint `generate`). */
  metrics?: { namespace?: string; component?: string; endpoint?: string };
}

/** Sampling options of `generate` (a `/v1/completions` body without the prompt). */
export type GenerateOptions = Omit<CompletionRequest, "prompt" | "stream" | "logprobs"> & {
  /**
   * Cancels the request; the stream then ends with a piece whose `finish` is `cancelled` (only
   * that piece, with no text, when the signal is already aborted).
   */
  signal?: AbortSignal;
};

/** A started model on the page. */
export class KilnModel {
  /** `chat.completions.create({ messages, stream }, { signal })`, as the `openai` client has it. */
  readonly chat: { completions: ChatCompletions };
  /** `completions.create({ prompt, stream }, { signal })`. */
  readonly completions: Completions;
  /**
   * `responses.create({ input, stream }, { signal })`, the Responses API on the chat path; its
   * `previous_response_id` continues a response kept on this page (256 at most, one hour each).
   */
  readonly responses: Responses;
  readonly #target: OpenAITarget;

  /** Wraps a started engine; `openModel` builds it (call that instead). */
  constructor(
    /** The engine in its worker (started): the `LLMEngine` the helpers run on. */
    readonly engine: WorkerEngine,
    /** What the engine reported at start: model name, context length, KV-cache and batch sizes. */
    readonly config: EngineConfig,
    /** The tokenizer and chat template, on this thread. */
    readonly text: ModelText,
    /** The engine's metrics; `generate` and the helpers add `dynamo_frontend_*` to its registry. */
    readonly metrics: EngineMetrics,
    /**
     * `origin`: the engine is shared with every tab of the origin (Kiln's `SharedWorker`);
     * `service-worker`: shared too, hosted by the app's service worker; `none`: it is this page's.
     */
    readonly sharing: Sharing = "none",
  ) {
    this.#target = {
      engine,
      text,
      model: config.model,
      contextLength: config.context_length ?? Number.MAX_SAFE_INTEGER,
      requests: new RequestMetrics(metrics.registry),
    };
    this.chat = { completions: new ChatCompletions(this.#target) };
    this.completions = new Completions(this.#target);
    this.responses = new Responses(this.#target);
  }

  /**
   * Stream the continuation of `prompt` (text without template, or token ids) as text pieces;
   * the last carries `finish`. Throws `EngineError` (`InvalidArgument`) on the first `next()` for
   * bad options. Leaving the loop early (`break`, `return`, `throw`) cancels the request in the
   * worker, and its KV blocks are free by the engine's next step.
   */
  generate(prompt: string | number[], options: GenerateOptions = {}): AsyncGenerator<TextPiece> {
    const { signal, ...body } = options;
    return generateText(this.#target, prompt, body, signal ?? new AbortController().signal);
  }

  /** The engine's and the requests' metrics: Prometheus text 0.0.4, or OpenMetrics 1.0. */
  metricsText(format: Format = "prometheus"): string {
    return this.metrics.render(format === "openmetrics" ? "application/openmetrics-text" : null)
      .body;
  }

  /** Drain, stop the engine and end its worker. */
  async close(): Promise<void> {
    await shutDown(this.engine, this.metrics);
  }
}

function source(
  model: OpenModelOptions["model"],
  cache = true,
): { spec: ModelSpec; files: ModelFiles } {
  if (typeof model === "string" || model instanceof URL) {
    const base = new URL(model, globalThis.location?.href).href;
    return {
      spec: { kind: "url", base, name: modelName(base), ...(cache ? {} : { cache: false }) },
      files: storedFiles(base, cache),
    };
  }
  const files = [...model];
  const weights = ggufEntry(files.map((f) => f.name)) ??
    files.find((f) => f.name.endsWith(".safetensors"))?.name ?? "model";
  return {
    spec: { kind: "files", files, name: modelName(weights.replace(/\.safetensors$/, "")) },
    files: fileListFiles(files),
  };
}

/**
 * Start an engine for `options.model` in a Web Worker and load the model's text side (tokenizer,
 * chat template) on this thread. Rejects with an `EngineError` naming what failed.
 */
export async function openModel(options: OpenModelOptions): Promise<KilnModel> {
  const { spec, files } = source(options.model, options.cache);
  if (options.name !== undefined) spec.name = options.name;
  const { shared, sharing } = await connectHost(options);
  const engine = new WorkerEngine(
    shared ? () => shared : options.makeWorker ?? kilnWorker,
    { ...options.engine, model: spec },
    options.onProgress,
    ...(options.liveness ? [options.liveness] : []),
  );
  const m = options.metrics ?? {};
  const { config, text, metrics } = await startModel(engine, files, {
    namespace: m.namespace ?? "kiln",
    component: m.component ?? "page",
    endpoint: m.endpoint ?? "generate",
    workerId: 0n,
  });
  return new KilnModel(engine, config, text, metrics, sharing);
}

/** The shared host `options.share` asks for, in order: the `SharedWorker`, the service worker. */
async function connectHost(
  options: OpenModelOptions,
): Promise<{ shared: Worker | undefined; sharing: Sharing }> {
  const { share, serviceWorker } = options;
  if (share === "service-worker" && serviceWorker === undefined) {
    throw EngineError.invalidField("serviceWorker", 'share: "service-worker" needs one');
  }
  if (share !== true && share !== "service-worker" && share) {
    throw EngineError.invalidField("share", 'is true, false or "service-worker"');
  }
  if (share === true) {
    const shared = await connectShared(options.makeSharedWorker ?? kilnSharedWorker);
    if (shared) return { shared, sharing: "origin" };
  }
  if (share && serviceWorker !== undefined) {
    const shared = await connectService(serviceWorker);
    if (shared) return { shared, sharing: "service-worker" };
  }
  return { shared: undefined, sharing: "none" };
}
