/**
 * `WebGpuEngine`: the `LLMEngine` contract on one WebGPU device. Requests join a continuously
 * batched step loop (see `scheduler.ts`); each step runs the forward pass over the batch and the
 * GPU sampler over the rows that need a token, then streams the results.
 *
 * This first version reads the sampled tokens back after every step before building the next
 * one; keeping tokens on the GPU and running several steps ahead is the next piece of work.
 */
import type {
  GenerateContext,
  LLMEngine,
  MetricsBindings,
  MetricsContext,
} from "../../contract/engine.ts";
import { EngineError } from "../../contract/errors.ts";
import type { KvEventPublisher, KvEventSource } from "../../contract/kv_events.ts";
import type { EngineConfig, LLMEngineOutput, PreprocessedRequest } from "../../contract/types.ts";
import { validateRequest } from "../../contract/validate.ts";
import { acquireGpu, type Gpu, runtimeData } from "../../gpu/device.ts";
import { MAX_TOP_LOGPROBS, Sampler } from "../../gpu/kernels/sampling.ts";
import type { ComponentGauges } from "../../metrics/engine_metrics.ts";
import { Forward } from "../../model/forward.ts";
import { GpuModel } from "../../model/gpu_model.ts";
import { type ModelFiles, readText } from "../../model/source.ts";
import { parseConfig } from "../../model/config.ts";
import { BlockManager } from "./block_manager.ts";
import { Scheduler } from "./scheduler.ts";
import { Sequence } from "./sequence.ts";

export interface WebGpuEngineOptions {
  files: ModelFiles;
  /** The model name reported in `EngineConfig.model`. */
  name: string;
  servedModelName?: string;
  blockSize?: number;
  /** KV cache blocks (default: four full contexts). */
  kvBlocks?: number;
  maxNumSeqs?: number;
  maxNumBatchedTokens?: number;
  /** An already acquired device (tests share one); otherwise the engine acquires and owns one. */
  gpu?: Gpu;
  /** How long drain() waits for in-flight requests (default 30 s). */
  drainTimeoutMs?: number;
}

type State = "new" | "starting" | "running" | "draining" | "stopped";

export class WebGpuEngine implements LLMEngine {
  #state: State = "new";
  #gpu: Gpu | undefined;
  #ownsGpu = false;
  #model: GpuModel | undefined;
  #forward: Forward | undefined;
  #sampler: Sampler | undefined;
  #blocks: BlockManager | undefined;
  #scheduler: Scheduler | undefined;
  #config: EngineConfig | undefined;
  #publisher: KvEventPublisher | undefined;
  #gauges: ComponentGauges | undefined;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #inflight = new Map<string, Sequence>();
  #gaugeListeners: ((
    values: { totalBlocks: number; usagePercent: number; hitRate: number | undefined },
  ) => void)[] = [];
  /** Time start() took, in seconds. */
  modelLoadTime = 0;
  /** Requests admitted and how they ended (finished + cancelled + failed = started once idle). */
  readonly stats = { started: 0, finished: 0, cancelled: 0, failed: 0 };

  constructor(readonly options: WebGpuEngineOptions) {}

  async start(_workerId: bigint): Promise<EngineConfig> {
    if (this.#state !== "new") {
      throw EngineError.shutdown(`start() called on a ${this.#state} engine`);
    }
    this.#state = "starting";
    const t0 = performance.now();
    const o = this.options;
    try {
      this.#ownsGpu = o.gpu === undefined;
      this.#gpu = o.gpu ?? await acquireGpu({ label: `kiln:${o.name}` });
      const blockSize = o.blockSize ?? 16;
      const configText = await readText(o.files, "config.json");
      if (configText === undefined) {
        throw EngineError.invalidArgument(`${o.files.location}: no config.json`);
      }
      const context = parseConfig(configText).maxPositionEmbeddings;
      const kvBlocks = o.kvBlocks ?? 4 * Math.ceil(context / blockSize);
      const model = this.#model = await GpuModel.load(this.#gpu, o.files, { blockSize, kvBlocks });
      const maxNumSeqs = o.maxNumSeqs ?? 16;
      const maxNumBatchedTokens = Math.max(o.maxNumBatchedTokens ?? 256, maxNumSeqs);
      this.#forward = new Forward(model);
      this.#sampler = new Sampler(this.#gpu.device, maxNumSeqs, model.config.vocabSize);
      this.#blocks = new BlockManager({
        numBlocks: kvBlocks,
        blockSize,
        onEvent: (e) => this.#publisher?.publish(e),
      });
      this.#scheduler = new Scheduler(this.#blocks, { maxNumSeqs, maxNumBatchedTokens });
      this.#config = {
        model: o.name,
        ...(o.servedModelName ? { served_model_name: o.servedModelName } : {}),
        context_length: context,
        kv_cache_block_size: blockSize,
        total_kv_blocks: kvBlocks,
        max_num_seqs: maxNumSeqs,
        max_num_batched_tokens: maxNumBatchedTokens,
        runtime_data: { ...runtimeData(this.#gpu.caps), engine: "webgpu" },
      };
      this.#gpu.lost.then((e) => this.#failAll(e));
    } catch (e) {
      await this.#release();
      this.#state = "stopped";
      throw e;
    }
    this.modelLoadTime = (performance.now() - t0) / 1000;
    this.#state = "running";
    return this.#config;
  }

  generate(request: PreprocessedRequest, ctx: GenerateContext): AsyncIterable<LLMEngineOutput> {
    return this.#stream(request, ctx);
  }

  async *#stream(
    request: PreprocessedRequest,
    ctx: GenerateContext,
  ): AsyncGenerator<LLMEngineOutput> {
    if (this.#state !== "running") {
      throw EngineError.shutdown(`generate() on a ${this.#state} engine`);
    }
    validateRequest(request);
    const model = this.#model!;
    const { vocabSize, maxPositionEmbeddings: context } = model.config;
    const prompt = request.token_ids;
    if (prompt.length === 0) throw EngineError.invalidArgument("request.token_ids: empty prompt");
    const bad = prompt.findIndex((t) => t >= vocabSize);
    if (bad >= 0) {
      throw EngineError.invalidArgument(
        `request.token_ids[${bad}]: ${prompt[bad]} >= vocab size ${vocabSize}`,
      );
    }
    if (prompt.length >= context) {
      throw EngineError.invalidArgument(
        `request.token_ids: ${prompt.length} tokens leave no room in the context of ${context}`,
      );
    }
    if (Math.ceil((prompt.length + 1) / this.#blocks!.blockSize) > this.#blocks!.numBlocks) {
      throw new EngineError(
        "ResourceExhausted",
        `the prompt needs more KV blocks than the cache has (${this.#blocks!.numBlocks})`,
      );
    }
    const n = request.sampling_options.n ?? 1;
    if (n !== 1) {
      throw EngineError.invalidArgument(
        `request.sampling_options.n: ${n} is not supported (1 only)`,
      );
    }
    if ((request.output_options.logprobs ?? 0) > MAX_TOP_LOGPROBS) {
      throw EngineError.invalidArgument(
        `request.output_options.logprobs: at most ${MAX_TOP_LOGPROBS}`,
      );
    }
    const seq = new Sequence(request, ctx, context);
    const signal = seq.signal;
    this.#inflight.set(ctx.requestId, seq);
    this.stats.started++;
    try {
      if (seq.maxTokens === 0) seq.finishEmpty();
      else {
        this.#scheduler!.waiting.push(seq);
        signal.addEventListener("abort", () => this.#wake?.(), { once: true });
        this.#kick();
      }
      yield* seq.channel.drain();
    } finally {
      // A consumer that stops pulling still frees its sequence.
      if (!seq.finished) seq.cancel();
      this.stats[seq.outcome ?? "cancelled"]++;
      this.#inflight.delete(ctx.requestId);
    }
  }

  #kick(): void {
    this.#wake?.();
    this.#loop ??= this.#run();
  }

  async #run(): Promise<void> {
    const sched = this.#scheduler!;
    while (this.#state === "running" || this.#state === "draining") {
      for (const seq of [...sched.running, ...sched.waiting]) {
        if (seq.finished || seq.signal.aborted) {
          seq.cancel();
          sched.remove(seq);
        }
      }
      if (sched.idle) {
        this.#loop = undefined; // synchronously, so a request arriving now starts a new loop
        return;
      }
      const step = sched.next();
      if (step === undefined) {
        // Nothing fits (every block held by sequences waiting to grow): wait for a change.
        await new Promise<void>((r) => (this.#wake = r));
        this.#wake = undefined;
        continue;
      }
      try {
        await this.#execute(step);
      } catch (e) {
        this.#failAll(EngineError.from(e));
        this.#loop = undefined;
        return;
      }
      this.#report();
    }
  }

  async #execute(step: NonNullable<ReturnType<Scheduler["next"]>>): Promise<void> {
    const device = this.#gpu!.device;
    const encoder = device.createCommandEncoder({ label: "engine:step" });
    const { logits } = await this.#forward!.encode(encoder, step.batch);
    const sampled = step.sampled;
    if (sampled.length > 0) {
      this.#sampler!.write(sampled.map((s) => s.sampling()));
      await this.#sampler!.encode(encoder, logits, sampled.length);
    }
    device.queue.submit([encoder.finish()]);
    const results = sampled.length > 0
      ? await this.#sampler!.read(
        sampled.length,
        sampled.some((s) => s.request.output_options.logprobs !== undefined),
      )
      : [];
    for (const { seq, count } of step.parts) {
      seq.computed += count;
      this.#blocks!.commit(seq.blocks!, seq.tokens, seq.computed);
    }
    sampled.forEach((seq, i) => {
      const r = results[i]!;
      if (seq.signal.aborted) seq.cancel();
      else seq.accept(r.token, r.logprob, r.top);
      if (seq.finished) this.#scheduler!.remove(seq);
    });
  }

  #report(): void {
    const b = this.#blocks;
    if (!b) return;
    const values = {
      totalBlocks: b.numBlocks,
      usagePercent: b.used / b.numBlocks,
      hitRate: b.hitRate,
    };
    if (this.#gauges) {
      this.#gauges.setTotalBlocks(values.totalBlocks);
      this.#gauges.setGpuCacheUsagePercent(values.usagePercent);
      this.#gauges.setKvCacheHitRate(values.hitRate);
    }
    for (const cb of this.#gaugeListeners) cb(values);
  }

  /** Call `cb` with the KV gauges after every step (the worker host forwards them). */
  onGauges(
    cb: (
      values: { totalBlocks: number; usagePercent: number; hitRate: number | undefined },
    ) => void,
  ): void {
    this.#gaugeListeners.push(cb);
    this.#report();
  }

  #failAll(error: EngineError): void {
    for (const seq of this.#inflight.values()) seq.fail(error);
    for (const seq of [...(this.#scheduler?.running ?? []), ...(this.#scheduler?.waiting ?? [])]) {
      this.#scheduler!.remove(seq);
    }
  }

  abort(ctx: GenerateContext): Promise<void> {
    this.#inflight.get(ctx.requestId)?.abort();
    return Promise.resolve();
  }

  async drain(): Promise<void> {
    if (this.#state === "running") this.#state = "draining";
    const deadline = this.options.drainTimeoutMs ?? 30_000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const done = Promise.all([...this.#inflight.values()].map((s) => s.done));
    await Promise.race([done, new Promise((r) => (timer = setTimeout(r, deadline)))]);
    clearTimeout(timer);
  }

  async cleanup(): Promise<void> {
    if (this.#state === "stopped" || this.#state === "new") {
      this.#state = "stopped";
      return;
    }
    this.#state = "stopped";
    for (const seq of this.#inflight.values()) seq.cancel();
    this.#wake?.();
    await this.#loop?.catch(() => {});
    this.#blocks?.clear();
    await this.#release();
  }

  async #release(): Promise<void> {
    this.#sampler?.destroy();
    this.#forward?.destroy();
    this.#model?.destroy();
    this.#sampler = undefined;
    this.#forward = undefined;
    this.#model = undefined;
    if (this.#ownsGpu) this.#gpu?.device.destroy();
    this.#gpu = undefined;
    await Promise.resolve();
  }

  kvEventSources(): Promise<KvEventSource[]> {
    return Promise.resolve([{ kind: "push", dp_rank: 0, onReady: (p) => (this.#publisher = p) }]);
  }

  setupMetrics(ctx: MetricsContext): Promise<MetricsBindings> {
    this.#gauges = ctx.metrics.componentGauges(0);
    this.#report();
    return Promise.resolve({ dp_ranks: [0] });
  }

  /** KV blocks held by running sequences (0 when idle). */
  get usedBlocks(): number {
    return this.#blocks?.used ?? 0;
  }
}
