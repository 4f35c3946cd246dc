/**
 * `OrtEngine`: the `LLMEngine` contract over an onnxruntime-web `InferenceSession` running an
 * ONNX decoder export (transformers.js layout) on the WebGPU execution provider, or on the wasm
 * EP where there is no WebGPU.
 *
 * On WebGPU the logits and every request's KV (`present.*`) stay on ORT's device as GPU
 * buffers; Kiln's WGSL sampler, built on the device ORT created (an app-created device is not
 * reliably honoured by onnxruntime-web yet), samples the last logits row there. On wasm the
 * logits are sampled on the CPU with the float64 reference sampler's semantics.
 *
 * Concurrent requests are interleaved fairly, not batched: the loop runs one step (the whole
 * prompt at first, then one token) of each live request in turn, round-robin. Requests at
 * different past lengths cannot share one batched run without padding every past to the longest
 * one (and masking it), which the export's `[batch, heads, past, dim]` KV makes a copy of every
 * request's cache per step; and an ORT session runs one `run()` at a time anyway. Requests past
 * `maxNumSeqs` wait in arrival order.
 */
import type {
  GenerateContext,
  LLMEngine,
  MetricsBindings,
  MetricsContext,
} from "../../contract/engine.ts";
import { EngineError } from "../../contract/errors.ts";
import type { EngineConfig, LLMEngineOutput, PreprocessedRequest } from "../../contract/types.ts";
import type { ComponentGauges } from "../../contract/metrics/engine_metrics.ts";
import type { ModelFiles } from "../../formats/source.ts";
import { checkRequest } from "../admission.ts";
import { LiveRequests, type RequestStats } from "../live_requests.ts";
import { Lifecycle } from "../lifecycle.ts";
import { Sequence } from "../sequence.ts";
import { EngineGuides, type GuidedLimits } from "../guided/mod.ts";
import { forcedRunLimit, type GuidedForcing } from "../token_mask.ts";
import {
  adapterHasF16,
  chooseEp,
  describeAdapter,
  type ExecutionProvider,
  loadOrt,
  type OpenedSession,
  openSession,
  samplerOnOrtDevice,
} from "./session.ts";
import { RoundRobin } from "./stepper.ts";

/** What `OrtEngine` loads and how it runs it. */
export interface OrtEngineOptions {
  /**
   * An ONNX export folder: config.json and onnx/<variant>.onnx (+ onnx/<variant>.onnx_data when
   * the weights are external). Files picked in a browser come by base name, so `<variant>.onnx`
   * at the top is accepted too.
   */
  files: ModelFiles;
  /** `EngineConfig.model`. */
  name: string;
  /** `EngineConfig.served_model_name`, when clients use another name than `name`. */
  servedModelName?: string;
  /**
   * "model" (f32), "model_fp16", "model_q4f16", "model_quantized", ...; default: model_fp16
   * where the device has shader-f16 and the file exists, else model, else the first present.
   */
  variant?: string;
  /**
   * Default "webgpu" where navigator.gpu exists, else "wasm". "webgpu" without navigator.gpu, or
   * any other value, makes `start()` reject with `InvalidArgument`.
   */
  executionProvider?: ExecutionProvider;
  /** Requests stepped at once (default 16); more wait in arrival order. */
  maxNumSeqs?: number;
  /** How long drain() waits for in-flight requests (default 30 s). */
  drainTimeoutMs?: number;
  /** onnxruntime-web's `env.wasm.wasmPaths`; default: its own resolution. */
  wasmPaths?: string;
  /**
   * Forced stretches in guided decoding (as `WebGpuEngineOptions.guidedForcing`): `chunk`
   * (default) appends the tokens a grammar allows alone without sampling them, and the next
   * `session.run` feeds them with the last sampled token; `off` samples every token.
   */
  guidedForcing?: GuidedForcing;
  /** Guided decoding's budgets (as `WebGpuEngineOptions.guidedLimits`). */
  guidedLimits?: GuidedLimits;
}

/** What `OrtEngine.onGauges` hears (see there). */
export type OrtGaugeValues = {
  totalBlocks: number;
  usagePercent: number;
  hitRate: number | undefined;
};

/**
 * The `LLMEngine` over an onnxruntime-web session of an ONNX decoder export. Construct, then
 * `start()`; requests are stepped round-robin (not batched), at most `maxNumSeqs` at once.
 * onnxruntime-web is loaded by a dynamic import at `start()`, so it is needed only then.
 */
export class OrtEngine implements LLMEngine {
  readonly #life = new Lifecycle();
  #opened: OpenedSession | undefined;
  /** The round-robin loop (once started). */
  #loop: RoundRobin | undefined;
  #device: GPUDevice | undefined;
  #lost: Promise<EngineError> | undefined;
  #config: EngineConfig | undefined;
  #gauges: ComponentGauges | undefined;
  #gaugeListeners: ((values: OrtGaugeValues) => void)[] = [];
  #inflight = new LiveRequests();
  #guides: EngineGuides | undefined;
  /** Time start() took, in seconds. */
  modelLoadTime = 0;
  /** Requests admitted and how they ended (finished + cancelled + failed = started once idle). */
  get stats(): RequestStats {
    return this.#inflight.stats;
  }
  /** `session.run` calls made (one per request step), and guided tokens forced (not sampled). */
  readonly steps = { runs: 0, forcedTokens: 0 };

  /** The longest run of forced tokens a guided sequence appends without sampling (0: off). */
  readonly #forceUpTo: number;

  /**
   * Keeps `options`; nothing is loaded before `start()`. A `guidedForcing` other than `chunk`
   * or `off` is `InvalidArgument`.
   */
  constructor(readonly options: OrtEngineOptions) {
    this.#forceUpTo = forcedRunLimit(options);
  }

  /**
   * Load onnxruntime-web, pick the variant, open the session and check its layout. Rejects with
   * an `EngineError`: `InvalidArgument` for a missing or unusable export (naming the file, input
   * or unsupported op) or a bad `executionProvider`, `EngineShutdown` when called twice.
   */
  async start(_workerId: bigint): Promise<EngineConfig> {
    this.#life.begin();
    const t0 = performance.now();
    const o = this.options;
    try {
      const ep = chooseEp(o.executionProvider);
      const ort = await loadOrt(o.wasmPaths);
      const preferF16 = ep === "webgpu" && await adapterHasF16();
      const opened = this.#opened = await openSession(ort, {
        files: o.files,
        ...(o.variant === undefined ? {} : { variant: o.variant }),
        ep,
        preferF16,
      });
      const layout = opened.layout;
      // WebGPU EP: Kiln's sampler on ORT's device, beside ORT's kernels.
      const { device, gpu } = ep === "webgpu"
        ? await samplerOnOrtDevice(ort, layout.vocab)
        : { device: undefined, gpu: undefined };
      this.#device = device;
      // EngineShutdown, as WebGpuEngine's: the host then replaces the worker.
      this.#lost = device?.lost.then((info) => {
        const e = EngineError.shutdown(`GPU device lost (${info.reason}): ${info.message}`);
        this.#inflight.failAll(e);
        return e;
      });
      const maxNumSeqs = o.maxNumSeqs ?? 16;
      const ctx = { ort, session: opened.session, layout, gpu };
      this.#loop = new RoundRobin(ctx, maxNumSeqs, this.steps, this.#life, () => this.#report());
      this.#config = {
        model: o.name,
        ...(o.servedModelName ? { served_model_name: o.servedModelName } : {}),
        context_length: layout.context,
        max_num_seqs: maxNumSeqs,
        runtime_data: {
          engine: "ort",
          execution_provider: ep,
          variant: opened.variant,
          onnx_file: opened.file,
          kv_dtype: layout.kvType,
          sampler: gpu === undefined ? "cpu-reference" : "wgsl",
          scheduling: "round-robin",
          ...(this.#device ? { adapter: describeAdapter(this.#device) } : {}),
        },
      };
    } catch (e) {
      await this.#life.failStart(() => this.#release());
      throw EngineError.from(e);
    }
    this.modelLoadTime = (performance.now() - t0) / 1000;
    this.#life.started();
    return this.#config;
  }

  /**
   * Stream the tokens of `request`. Past `maxNumSeqs` live requests it waits in arrival order;
   * bad token ids or a request that does not fit the context fail with `InvalidArgument`, a
   * call before `start()` or after `drain()` with `EngineShutdown`.
   */
  async *generate(
    request: PreprocessedRequest,
    ctx: GenerateContext,
  ): AsyncGenerator<LLMEngineOutput> {
    this.#life.require("generate()");
    const layout = this.#loop!.ctx.layout;
    checkRequest(request, layout.vocab, layout.context);
    // A guided request's grammar compiled and its first mask made before it is queued.
    this.#guides ??= new EngineGuides(this.options.files, layout.vocab, this.options.guidedLimits);
    const forcing = { vocab: layout.vocab, forceUpTo: this.#forceUpTo, tally: this.steps };
    const made = this.#guides.sequence(
      request,
      undefined,
      (provider) =>
        new Sequence(request, ctx, layout.context, provider && { provider, ...forcing }),
      () => this.#life.state,
    );
    const seq = made instanceof Sequence ? made : await made;
    yield* this.#inflight.stream(seq, () => this.#loop!.admit(seq));
  }

  /** KV gauges: one "block" per request slot (ORT's KV is per request, not paged). */
  #report(): void {
    const max = this.#config?.max_num_seqs ?? 0;
    if (max === 0) return;
    const values: OrtGaugeValues = {
      totalBlocks: max,
      usagePercent: (this.#loop?.rotating ?? 0) / max,
      hitRate: undefined,
    };
    this.#gauges?.setTotalBlocks(values.totalBlocks);
    this.#gauges?.setGpuCacheUsagePercent(values.usagePercent);
    for (const cb of this.#gaugeListeners) cb(values);
  }

  /**
   * Call `cb` with the gauges after every step (the worker host forwards them). ORT's KV is per
   * request, not paged: `totalBlocks` is `maxNumSeqs`, `usagePercent` the fraction (0 to 1) of
   * those slots in use, `hitRate` always `undefined` (no prefix cache).
   */
  onGauges(cb: (values: OrtGaugeValues) => void): void {
    this.#gaugeListeners.push(cb);
    this.#report();
  }

  /** End the request of `ctx`; its stream finishes `cancelled`. */
  abort(ctx: GenerateContext): Promise<void> {
    this.#inflight.abort(ctx);
    return Promise.resolve();
  }

  /** Refuse new requests and wait for the in-flight ones, at most `drainTimeoutMs`. */
  drain(): Promise<void> {
    return this.#life.drain(() => this.#inflight.ended(), this.options.drainTimeoutMs ?? 30_000);
  }

  /** Cancel what is in flight and release the session and Kiln's GPU buffers. Idempotent. */
  cleanup(): Promise<void> {
    return this.#life.cleanup(async () => {
      this.#inflight.cancelAll();
      await this.#loop?.loop?.catch(() => {});
      this.#loop?.prune();
      this.#guides?.close();
      await this.#release();
    });
  }

  async #release(): Promise<void> {
    this.#loop?.ctx.gpu?.destroy();
    const session = this.#opened?.session;
    this.#opened = undefined;
    this.#device = undefined;
    // ORT's device is ORT's: it is not destroyed here.
    await session?.release().catch(() => {});
  }

  /** Bind the KV gauges (see `onGauges`) to `ctx`'s component metrics, data-parallel rank 0. */
  setupMetrics(ctx: MetricsContext): Promise<MetricsBindings> {
    this.#gauges = ctx.metrics.componentGauges(0);
    this.#report();
    return Promise.resolve({ dp_ranks: [0] });
  }

  /** Request slots holding KV now (of `maxNumSeqs`); 0 once every request has ended. */
  get usedSlots(): number {
    return this.#loop?.usedSlots ?? 0;
  }

  /** The device ORT runs on and Kiln's sampler shares (WebGPU EP, once started). */
  get device(): GPUDevice | undefined {
    return this.#device;
  }

  /**
   * WebGPU EP, once started: resolves with an `EngineShutdown` error when ORT's device is lost,
   * after every live request has failed with it. Undefined on the wasm EP.
   */
  get lost(): Promise<EngineError> | undefined {
    return this.#lost;
  }
}
