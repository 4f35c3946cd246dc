/**
 * `WebGpuEngine`: the `LLMEngine` contract on one WebGPU device. Requests join a continuously
 * batched step loop (see `scheduler.ts`); each step runs the forward pass over the batch and the
 * GPU sampler over the rows that need a token, then streams the results.
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
import { KvGauges, type KvGaugeValues } from "./kv_gauges.ts";
import { MemoryGauges } from "./memory_gauges.ts";
import { routerGauges } from "../../metrics/router_gauges.ts";
import { SpeculationMetrics } from "../speculation_metrics.ts";
import type { GpuModel } from "../../runtime/gpu_model.ts";
import { checkRequest } from "../admission.ts";
import { BlockManager } from "./block_manager.ts";
import type { Scheduler } from "./scheduler.ts";
import { LiveRequests, type RequestStats } from "../live_requests.ts";
import { Sequence } from "../sequence.ts";
import { PipelineDepth } from "./pipeline_depth.ts";
import type { WarmUpReport } from "./warmup.ts";
import { assembleEngine } from "./assemble.ts";
import { engineGpu, type WebGpuEngineOptions } from "./options.ts";
import { startDraft, type StartedDraft } from "./draft_engine.ts";
import { forcedRunLimit, type TokenMaskProvider } from "../token_mask.ts";
import { EngineGuides } from "../guided/mod.ts";
import { type InFlight, type StepCounts, stepCounts } from "./step_counts.ts";
import { settleStep, type StepParts, submitStep } from "./engine_steps.ts";
import { engineControls } from "./engine_controls.ts";
import {
  type SpeculationCounts,
  speculationCounts,
  type SpeculativeSettings,
  speculativeSettings,
} from "../speculation.ts";

export type { WebGpuEngineOptions } from "./options.ts";

type State = "new" | "starting" | "running" | "draining" | "stopped";

/**
 * An {@linkcode LLMEngine} running a checkpoint of any family `src/model/arch/` describes on WebGPU,
 * with continuous batching over a paged, prefix-cached KV cache.
 */
export class WebGpuEngine implements LLMEngine {
  #state: State = "new";
  #gpu: Gpu | undefined;
  #ownsGpu = false;
  #model: GpuModel | undefined;
  /** What steps run on (once started). */
  #parts: StepParts | undefined;
  #blocks: BlockManager | undefined;
  #scheduler: Scheduler | undefined;
  #config: EngineConfig | undefined;
  #publisher: KvEventPublisher | undefined;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  /** `options.speculative` checked, with its defaults (undefined: off). */
  readonly #spec: SpeculativeSettings | undefined;
  /** The draft model's engine (`speculative.method` `draft_model`). */
  #draft: StartedDraft | undefined;
  #pipe: InFlight[] = [];
  #depth: PipelineDepth;
  #inflight = new LiveRequests();
  #gauges = new KvGauges();
  #memory = new MemoryGauges();
  #specMetrics = new SpeculationMetrics();
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
    this.#depth = new PipelineDepth(options.pipelineDepth);
    this.#forceUpTo = forcedRunLimit(options);
    this.#spec = options.speculative && speculativeSettings(options.speculative);
    this.speculation = speculationCounts(this.#spec ? this.#spec.numSpeculativeTokens : 0);
  }

  async start(_workerId: bigint): Promise<EngineConfig> {
    if (this.#state !== "new") {
      throw EngineError.shutdown(`start() called on a ${this.#state} engine`);
    }
    this.#state = "starting";
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
          hooks: { wake: () => this.#wake?.(), stepMs: () => this.#depth.gapMs },
        },
      );
      this.#model = parts.model;
      this.#blocks = parts.blocks;
      this.#scheduler = parts.scheduler;
      this.#config = parts.config;
      this.warmUpReport = parts.warmUpReport;
      const device = this.#gpu.device;
      this.#parts = {
        ...parts,
        device,
        pipe: this.#pipe,
        depth: this.#depth,
        steps: this.steps,
        speculation: this.speculation,
        wake: () => this.#wake?.(),
      };
      this.#gpu.lost.then((e) => this.#failAll(e));
      // A validation or out-of-memory error means the results can no longer be trusted: fail
      // the requests in flight loudly instead of streaming garbage.
      device.addEventListener("uncapturederror", this.#onGpuError);
    } catch (e) {
      await this.#release();
      this.#state = "stopped";
      throw e;
    }
    this.modelLoadTime = (performance.now() - t0) / 1000;
    this.#state = "running";
    return this.#config;
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
    if (this.#state !== "running") {
      throw EngineError.shutdown(`generate() on a ${this.#state} engine`);
    }
    const context = this.#model!.config.maxPositionEmbeddings;
    checkRequest(request, this.#model!.config.vocabSize, context, this.#blocks!);
    // A sequence ends with `length` when it fills the context or the whole cache (unless the
    // model's window lets it drop blocks as it goes), so it can always be readmitted.
    const vocab = this.#model!.config.vocabSize;
    // A guided request's grammar compiled and its first mask made before it is queued.
    this.#guides ??= new EngineGuides(this.options.files, vocab, this.options.guidedLimits);
    const limit = this.#scheduler!.sequenceLimit(context);
    const made = this.#guides.sequence(
      request,
      guide,
      (provider) =>
        new Sequence(
          request,
          ctx,
          limit,
          provider && {
            provider,
            vocab,
            forceUpTo: this.#forceUpTo,
            tally: this.steps,
          },
        ),
      () => this.#state,
    );
    const seq = made instanceof Sequence ? made : await made;
    yield* this.#inflight.stream(seq, () => {
      // Ended already (its first forced tokens reached a stop condition): nothing to run. (A
      // loop started for it alone would end before `#loop` is set, and stay set.)
      if (seq.finished) return;
      this.#scheduler!.waiting.push(seq);
      // End the stream at once, not when the step in flight is read back (a slow device may
      // take seconds per step); the loop frees its blocks at its next turn, and tokens still
      // in flight for it are dropped.
      seq.signal.addEventListener("abort", () => {
        seq.cancel();
        this.#wake?.();
      }, { once: true });
      this.#kick();
    });
  }

  #kick(): void {
    this.#wake?.();
    this.#loop ??= this.#run();
  }

  #prune(): void {
    const sched = this.#scheduler!;
    let freed = false;
    for (const seq of [...sched.running, ...sched.waiting]) {
      if (seq.finished || seq.signal.aborted) {
        seq.cancel();
        sched.remove(seq);
        freed = true;
      }
    }
    if (freed) this.#report(); // at once, not after the steps still in flight are read back
  }

  async #run(): Promise<void> {
    const sched = this.#scheduler!;
    try {
      while (this.#state === "running" || this.#state === "draining") {
        this.#prune();
        while (this.#pipe[0]?.resolvedAt !== undefined) {
          await settleStep(this.#parts!, this.#pipe.shift()!);
        }
        if (sched.idle && this.#pipe.length === 0) {
          this.#loop = undefined; // synchronously, so a request arriving now starts a new loop
          return;
        }
        sched.maxAhead = this.#depth.depth;
        const step = this.#pipe.length < sched.maxAhead ? sched.next() : undefined;
        if (step !== undefined) {
          await submitStep(this.#parts!, step);
        } else if (this.#pipe.length > 0) {
          await settleStep(this.#parts!, this.#pipe.shift()!);
        } else {
          // Nothing fits (every block held by sequences waiting to grow): wait for a change.
          await new Promise<void>((r) => (this.#wake = r));
          this.#wake = undefined;
        }
        this.steps.preemptions = sched.preemptions;
        this.steps.droppedBlocks = sched.droppedBlocks;
        this.#report();
      }
    } catch (e) {
      this.#failAll(EngineError.from(e));
    } finally {
      this.#loop = undefined;
      // What is still in flight belongs to failed or cancelled requests.
      await Promise.allSettled(this.#pipe.splice(0).map((p) => p.results));
    }
  }

  #report(): void {
    const sched = this.#scheduler;
    const requests = { running: sched?.running.length ?? 0, waiting: sched?.waiting.length ?? 0 };
    this.#gauges.report(this.#blocks, requests, this.speculation);
    this.#memory.report(this.#gpu?.device);
    this.#specMetrics.report(this.speculation);
  }

  /** Call `cb` with the KV gauges after every step (the worker host forwards them). */
  onGauges(cb: (values: KvGaugeValues) => void): void {
    this.#gauges.listen(cb);
    this.#report();
  }

  #failAll(error: EngineError): void {
    this.#inflight.failAll(error);
    for (const seq of [...(this.#scheduler?.running ?? []), ...(this.#scheduler?.waiting ?? [])]) {
      this.#scheduler!.remove(seq);
    }
  }

  abort(ctx: GenerateContext): Promise<void> {
    this.#inflight.abort(ctx);
    return Promise.resolve();
  }

  async drain(): Promise<void> {
    if (this.#state === "running") this.#state = "draining";
    await this.#inflight.settle(this.options.drainTimeoutMs ?? 30_000);
  }

  async cleanup(): Promise<void> {
    if (this.#state === "stopped" || this.#state === "new") {
      this.#state = "stopped";
      return;
    }
    this.#state = "stopped";
    this.#inflight.cancelAll();
    this.#wake?.();
    await this.#loop?.catch(() => {});
    this.#blocks?.clear();
    this.#guides?.close();
    await this.#release();
  }

  readonly #onGpuError: Parameters<GPUDevice["addEventListener"]>[1] = (ev): void => {
    const message = (ev as unknown as { error?: { message?: string } }).error?.message ??
      "unknown";
    this.#failAll(new EngineError("Unknown", `GPU error: ${message}`));
  };

  async #release(): Promise<void> {
    this.#gpu?.device.removeEventListener("uncapturederror", this.#onGpuError);
    this.#parts?.readback.destroy();
    this.#parts?.sampler.destroy();
    this.#parts?.tokens.destroy();
    this.#parts?.forward.destroy();
    this.#model?.destroy();
    await this.#draft?.engine.cleanup();
    this.#draft = undefined;
    this.#parts = undefined;
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
      this.#state === "running" ? probeRequest(this.#config!.model, bos) : null,
    );
  }

  /** The engine's controls (see `engine_controls.ts`). */
  readonly #controls = engineControls({
    state: () => this.#state,
    blocks: () => this.#blocks,
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
    this.#gauges.bind(ctx.metrics.componentGauges(0), routerGauges(ctx.metrics));
    this.#memory.bind(ctx.metrics);
    this.#specMetrics.bind(ctx.metrics);
    this.#report();
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
    return this.#blocks?.cachedHashes() ?? [];
  }

  /** KV blocks held by running sequences (0 when idle). */
  get usedBlocks(): number {
    return this.#blocks?.used ?? 0;
  }

  /** The model's vocabulary size (0 before `start()`). */
  get vocabSize(): number {
    return this.#model?.config.vocabSize ?? 0;
  }

  /** KV blocks in the cache (0 before `start()`). */
  get totalBlocks(): number {
    return this.#blocks?.numBlocks ?? 0;
  }
}
