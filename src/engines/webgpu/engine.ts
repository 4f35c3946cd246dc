/**
 * `WebGpuEngine`: the `LLMEngine` contract on one WebGPU device, the face of the engine: its
 * life (`../lifecycle.ts`), admission, streams, gauges and controls. Requests join a continuously
 * batched step loop (`core.ts`, see `scheduler.ts`); each step runs the forward pass over the
 * batch and the GPU sampler over the rows that need a token, then streams the results.
 *
 * Decode does not wait for the GPU once per token: sampled tokens are appended to a token store
 * on the GPU that the next step reads its inputs from, several steps stay in flight, and each
 * step's tokens are read back asynchronously. A stop found in a read-back token discards the
 * steps already submitted after it. A request guided by a token mask provider (`generate`'s
 * third argument) is the exception: its next mask depends on its last token, so it samples only
 * once that token is read back, while free requests in the same batches run ahead.
 */
import type {
  GenerateContext,
  LLMEngine,
  MetricsBindings,
  MetricsContext,
} from "../../contract/engine.ts";
import { EngineError } from "../../contract/errors.ts";
import { probeRequest, runControl } from "../../contract/engine_hooks.ts";
import type { KvEventPublisher, KvEventSource } from "../../contract/kv_events.ts";
import type { EngineConfig, LLMEngineOutput, PreprocessedRequest } from "../../contract/types.ts";
import type { Gpu } from "../../gpu/device.ts";
import type { KvGaugeValues } from "./kv_gauges.ts";
import type { GpuModel } from "../../runtime/gpu_model.ts";
import { checkRequest } from "../admission.ts";
import { LiveRequests, type RequestStats } from "../live_requests.ts";
import { Lifecycle } from "../lifecycle.ts";
import { Sequence } from "../sequence.ts";
import { EngineCore, watchDevice } from "./core.ts";
import type { WarmUpReport } from "./warmup.ts";
import { assembleEngine, type EngineParts } from "./assemble.ts";
import { engineGpu, type WebGpuEngineOptions } from "./options.ts";
import { startDraft, type StartedDraft } from "./draft_engine.ts";
import { forcedRunLimit, type TokenMaskProvider } from "../token_mask.ts";
import { EngineGuides } from "../guided/mod.ts";
import { type StepCounts, stepCounts } from "./step_counts.ts";
import { engineControls, EngineGauges } from "./engine_controls.ts";
import {
  type SpeculationCounts,
  speculationCounts,
  type SpeculativeSettings,
  speculativeSettings,
} from "../speculation.ts";

export type { WebGpuEngineOptions } from "./options.ts";

/**
 * An {@linkcode LLMEngine} running a checkpoint of any family `src/model/arch/` describes on WebGPU,
 * with continuous batching over a paged, prefix-cached KV cache.
 */
export class WebGpuEngine implements LLMEngine {
  readonly #life = new Lifecycle();
  #gpu: Gpu | undefined;
  #ownsGpu = false;
  #model: GpuModel | undefined;
  /** The step loop (once started). */
  #core: EngineCore | undefined;
  /** What the engine runs on (once started). */
  #parts: EngineParts | undefined;
  /** Stops failing requests on the device's errors. */
  #unwatch: (() => void) | undefined;
  #publisher: KvEventPublisher | undefined;
  /** `options.speculative` checked, with its defaults (undefined: off). */
  readonly #spec: SpeculativeSettings | undefined;
  /** The draft model's engine (`speculative.method` `draft_model`). */
  #draft: StartedDraft | undefined;
  #inflight = new LiveRequests();
  #guides: EngineGuides | undefined;
  /** The longest run of forced tokens a guided sequence appends without sampling (0: off). */
  readonly #forceUpTo: number;
  /** Time start() took, in seconds. */
  modelLoadTime = 0;
  /** What `start()`'s warm-up compiled, and how long it took (undefined without one). */
  warmUpReport: WarmUpReport | undefined;
  /** Requests admitted and how they ended (finished + cancelled + failed = started once idle). */
  get stats(): RequestStats {
    return this.#inflight.stats;
  }
  /** What the step loop counts: steps (guided, mixed), preemptions, dropped and forced tokens. */
  readonly steps: StepCounts = stepCounts();
  /** Drafts verified and accepted (all zero without `speculative`). */
  readonly speculation: SpeculationCounts;

  /** An engine in the `new` state; `start()` loads the model and acquires the device. */
  constructor(readonly options: WebGpuEngineOptions) {
    this.#forceUpTo = forcedRunLimit(options);
    this.#spec = options.speculative && speculativeSettings(options.speculative);
    this.speculation = speculationCounts(this.#spec ? this.#spec.numSpeculativeTokens : 0);
  }

  async start(_workerId: bigint): Promise<EngineConfig> {
    this.#life.begin();
    const t0 = performance.now();
    const o = this.options;
    try {
      this.#ownsGpu = o.gpu === undefined;
      this.#gpu = await engineGpu(o);
      if (this.#spec?.method === "draft_model") {
        this.#draft = await startDraft(o, this.#spec, this.#gpu, (d) => new WebGpuEngine(d));
      }
      const parts = await assembleEngine(
        o,
        this.#gpu,
        (e) => this.#publisher?.publish(e),
        this.#draft && {
          started: this.#draft,
          hooks: { wake: () => this.#core?.wake(), stepMs: () => this.#core?.gapMs },
        },
      );
      this.#parts = parts;
      this.#model = parts.model;
      this.warmUpReport = parts.warmUpReport;
      const counts = { steps: this.steps, speculation: this.speculation };
      const on = { device: this.#gpu.device, pipelineDepth: o.pipelineDepth };
      const fail = (e: EngineError) => this.#failAll(e);
      const hooks = { active: () => this.#life.active, report: () => this.#report(), fail };
      this.#core = new EngineCore({ ...parts, ...on, ...counts }, hooks);
      this.#unwatch = watchDevice(this.#gpu, fail);
    } catch (e) {
      await this.#life.failStart(() => this.#release());
      throw e;
    }
    this.modelLoadTime = (performance.now() - t0) / 1000;
    this.#life.started();
    return this.#parts!.config;
  }

  /**
   * Stream a request's tokens. `guide` constrains each of them: asked for the bitmask of the
   * tokens allowed next before each is sampled (on the GPU, in the same batches as free
   * requests); it fails this request only.
   */
  generate(
    request: PreprocessedRequest,
    ctx: GenerateContext,
    guide?: TokenMaskProvider,
  ): AsyncIterable<LLMEngineOutput> {
    return this.#stream(request, ctx, guide);
  }

  async *#stream(
    request: PreprocessedRequest,
    ctx: GenerateContext,
    guide: TokenMaskProvider | undefined,
  ): AsyncGenerator<LLMEngineOutput> {
    this.#life.require("generate()");
    const context = this.#model!.config.maxPositionEmbeddings;
    checkRequest(request, this.#model!.config.vocabSize, context, this.#parts!.blocks);
    // A sequence ends with `length` when it fills the context or the whole cache (unless the
    // model's window lets it drop blocks as it goes), so it can always be readmitted.
    const vocab = this.#model!.config.vocabSize;
    // A guided request's grammar compiled and its first mask made before it is queued.
    this.#guides ??= new EngineGuides(this.options.files, vocab, this.options.guidedLimits);
    const limit = this.#parts!.scheduler.sequenceLimit(context);
    const forcing = { vocab, forceUpTo: this.#forceUpTo, tally: this.steps };
    const made = this.#guides.sequence(
      request,
      guide,
      (provider) => new Sequence(request, ctx, limit, provider && { provider, ...forcing }),
      () => this.#life.state,
    );
    const seq = made instanceof Sequence ? made : await made;
    yield* this.#inflight.stream(seq, () => {
      // Ended already (its first forced tokens reached a stop condition): nothing to run. (A
      // loop started for it alone would end before the core holds it, and stay set.)
      if (!seq.finished) this.#core!.admit(seq);
    });
  }

  /** The KV cache, GPU memory and speculation gauges (see `engine_controls.ts`). */
  readonly #gauges = new EngineGauges({
    scheduler: () => this.#parts?.scheduler,
    blocks: () => this.#parts?.blocks,
    device: () => this.#gpu?.device,
    speculation: () => this.speculation,
  });

  #report(): void {
    this.#gauges.report();
  }

  /** Call `cb` with the KV gauges after every step (the worker host forwards them). */
  onGauges(cb: (values: KvGaugeValues) => void): void {
    this.#gauges.listen(cb);
  }

  #failAll(error: EngineError): void {
    this.#inflight.failAll(error);
    this.#core?.removeAll();
  }

  abort(ctx: GenerateContext): Promise<void> {
    this.#inflight.abort(ctx);
    return Promise.resolve();
  }

  /** Refuse new requests and wait for the live ones, at most `drainTimeoutMs` (default 30 s). */
  drain(): Promise<void> {
    return this.#life.drain(() => this.#inflight.ended(), this.options.drainTimeoutMs ?? 30_000);
  }

  /** Cancel what is live, stop the loop and release the GPU resources. Idempotent. */
  cleanup(): Promise<void> {
    return this.#life.cleanup(async () => {
      this.#inflight.cancelAll();
      this.#core?.wake();
      await this.#core?.loop?.catch(() => {});
      this.#parts?.blocks.clear();
      this.#guides?.close();
      await this.#release();
    });
  }

  async #release(): Promise<void> {
    this.#unwatch?.();
    this.#core?.destroy();
    this.#model?.destroy();
    await this.#draft?.engine.cleanup();
    this.#draft = undefined;
    this.#core = undefined;
    this.#model = undefined;
    if (this.#ownsGpu) this.#gpu?.device.destroy();
    this.#gpu = undefined;
    await Promise.resolve();
  }

  kvEventSources(): Promise<KvEventSource[]> {
    return Promise.resolve([{ kind: "push", dp_rank: 0, onReady: (p) => (this.#publisher = p) }]);
  }

  /** True when no request is live: none queued, running or still streaming. */
  isQuiescent(): Promise<boolean | null> {
    return Promise.resolve(this.#inflight.size === 0);
  }

  /** A one-token probe of the model's BOS (token 0 without one); null unless running. */
  healthCheckPayload(): Promise<PreprocessedRequest | null> {
    const bos = this.#model?.config.bosTokenId ?? 0;
    return Promise.resolve(
      this.#life.state === "running" ? probeRequest(this.#parts!.config.model, bos) : null,
    );
  }

  /** The engine's controls (see `engine_controls.ts`). */
  readonly #controls = engineControls({
    state: () => this.#life.state,
    blocks: () => this.#parts?.blocks,
    report: () => this.#report(),
  });

  /** `clear_kv_blocks`. */
  supportedControls(): Promise<string[]> {
    return Promise.resolve(Object.keys(this.#controls));
  }

  /** Runs a control `supportedControls` names; any other is refused (`InvalidArgument`). */
  engineControl(control: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    return runControl(this.#controls, control, body);
  }

  setupMetrics(ctx: MetricsContext): Promise<MetricsBindings> {
    this.#gauges.bind(ctx.metrics);
    return Promise.resolve({ dp_ranks: [0] });
  }

  /** The GPU the engine runs on (once started): its device and the promise of its loss. */
  get gpu(): Gpu | undefined {
    return this.#gpu;
  }

  /**
   * The hashes of the blocks in the prefix cache now, as KV events publish them: the set a
   * router rebuilds from the events (empty before `start()`).
   */
  cachedBlockHashes(): bigint[] {
    return this.#parts?.blocks.cachedHashes() ?? [];
  }

  /** KV blocks held by running sequences (0 when idle). */
  get usedBlocks(): number {
    return this.#parts?.blocks.used ?? 0;
  }

  /** The model's vocabulary size (0 before `start()`). */
  get vocabSize(): number {
    return this.#model?.config.vocabSize ?? 0;
  }

  /** KV blocks in the cache (0 before `start()`). */
  get totalBlocks(): number {
    return this.#parts?.blocks.numBlocks ?? 0;
  }
}
