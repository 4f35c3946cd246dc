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
import type { ComponentGauges } from "../../metrics/engine_metrics.ts";
import type { ModelFiles } from "../../formats/source.ts";
import { checkRequest } from "../admission.ts";
import { LiveRequests, type RequestStats } from "../live_requests.ts";
import { Sequence } from "../sequence.ts";
import { EngineGuides, type GuidedLimits } from "../guided/mod.ts";
import { forcedRunLimit, type GuidedForcing } from "../token_mask.ts";
import { GpuRowSampler } from "./sampling.ts";
import { type ExecutionProvider, loadOrt, type OpenedSession, openSession } from "./session.ts";
import { OrtRequest, step, type StepContext } from "./stepper.ts";

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

type State = "new" | "starting" | "running" | "draining" | "stopped";
type GaugeValues = { totalBlocks: number; usagePercent: number; hitRate: number | undefined };

function hasWebGpu(): boolean {
  return typeof navigator !== "undefined" && "gpu" in navigator && navigator.gpu !== undefined;
}

async function adapterHasF16(): Promise<boolean> {
  try {
    return (await navigator.gpu.requestAdapter())?.features.has("shader-f16") ?? false;
  } catch {
    return false;
  }
}

/**
 * The `LLMEngine` over an onnxruntime-web session of an ONNX decoder export. Construct, then
 * `start()`; requests are stepped round-robin (not batched), at most `maxNumSeqs` at once.
 * onnxruntime-web is loaded by a dynamic import at `start()`, so it is needed only then.
 */
export class OrtEngine implements LLMEngine {
  #state: State = "new";
  #opened: OpenedSession | undefined;
  #ctx: StepContext | undefined;
  #device: GPUDevice | undefined;
  #lost: Promise<EngineError> | undefined;
  #config: EngineConfig | undefined;
  #gauges: ComponentGauges | undefined;
  #gaugeListeners: ((values: GaugeValues) => void)[] = [];
  #loop: Promise<void> | undefined;
  #waiting: OrtRequest[] = [];
  #active: OrtRequest[] = [];
  /** The request whose step is running (out of `#active` meanwhile). */
  #stepping: OrtRequest | undefined;
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
    if (this.#state !== "new") {
      throw EngineError.shutdown(`start() called on a ${this.#state} engine`);
    }
    this.#state = "starting";
    const t0 = performance.now();
    const o = this.options;
    try {
      const ep = o.executionProvider ?? (hasWebGpu() ? "webgpu" : "wasm");
      if (ep !== "webgpu" && ep !== "wasm") {
        throw EngineError.invalidArgument(`executionProvider: ${ep} is not webgpu or wasm`);
      }
      if (ep === "webgpu" && !hasWebGpu()) {
        throw EngineError.invalidArgument("executionProvider webgpu: no navigator.gpu here");
      }
      const ort = await loadOrt(o.wasmPaths);
      const preferF16 = ep === "webgpu" && await adapterHasF16();
      const opened = this.#opened = await openSession(ort, {
        files: o.files,
        ...(o.variant === undefined ? {} : { variant: o.variant }),
        ep,
        preferF16,
      });
      const layout = opened.layout;
      let gpu: GpuRowSampler | undefined;
      if (ep === "webgpu") {
        // The device ORT created for this session: Kiln's kernels run on it, beside ORT's.
        const device = this.#device = await ort.env.webgpu.device as GPUDevice;
        gpu = new GpuRowSampler(device, layout.vocab);
        // Its pipelines compile now rather than in the first request (ORT's own kernels still
        // compile at the session's first run).
        await gpu.warm().catch((e) => {
          gpu?.destroy();
          throw e;
        });
        // EngineShutdown, as WebGpuEngine's: the host then replaces the worker.
        this.#lost = device.lost.then((info) => {
          const e = new EngineError(
            "EngineShutdown",
            `GPU device lost (${info.reason}): ${info.message}`,
          );
          this.#failAll(e);
          return e;
        });
      }
      this.#ctx = { ort, session: opened.session, layout, gpu };
      const maxNumSeqs = o.maxNumSeqs ?? 16;
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
      await this.#release();
      this.#state = "stopped";
      throw EngineError.from(e);
    }
    this.modelLoadTime = (performance.now() - t0) / 1000;
    this.#state = "running";
    return this.#config;
  }

  /**
   * Stream the tokens of `request`. Past `maxNumSeqs` live requests it waits in arrival order;
   * bad token ids or a request that does not fit the context fail with `InvalidArgument`, a
   * call before `start()` or after `drain()` with `EngineShutdown`.
   */
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
    const layout = this.#ctx!.layout;
    checkRequest(request, layout.vocab, layout.context);
    // A guided request's grammar compiled and its first mask made before it is queued.
    this.#guides ??= new EngineGuides(this.options.files, layout.vocab, this.options.guidedLimits);
    const made = this.#guides.sequence(
      request,
      undefined,
      (provider) =>
        new Sequence(
          request,
          ctx,
          layout.context,
          provider && {
            provider,
            vocab: layout.vocab,
            forceUpTo: this.#forceUpTo,
            tally: this.steps,
          },
        ),
      () => this.#state,
    );
    const seq = made instanceof Sequence ? made : await made;
    yield* this.#inflight.stream(seq, () => {
      this.#waiting.push(new OrtRequest(seq));
      // End the stream at once, not when the step in flight returns; the loop releases the
      // request's KV after that step.
      seq.signal.addEventListener("abort", () => seq.cancel(), { once: true });
      this.#loop ??= this.#run();
    });
  }

  async #run(): Promise<void> {
    const max = this.#config!.max_num_seqs ?? 16;
    // Not synchronously: `this.#loop ??= this.#run()` must be assigned before this can end.
    await Promise.resolve();
    try {
      while (this.#state === "running" || this.#state === "draining") {
        this.#prune();
        while (this.#active.length < max && this.#waiting.length > 0) {
          this.#active.push(this.#waiting.shift()!);
        }
        this.#report();
        const r = this.#stepping = this.#active.shift();
        if (r === undefined) return;
        try {
          this.steps.runs++;
          const t = await step(this.#ctx!, r);
          if (r.seq.signal.aborted) r.seq.cancel();
          else r.seq.accept(t.token, t.logprob, t.top);
          await r.seq.prepareMask(); // a guided request's next mask
        } catch (e) {
          r.seq.fail(EngineError.from(e));
        }
        this.#stepping = undefined;
        if (r.seq.finished) r.dispose();
        else this.#active.push(r); // to the back: round-robin
      }
    } finally {
      this.#loop = undefined;
      this.#stepping = undefined;
      if (this.#state === "stopped") this.#prune();
      this.#report();
      // A request that arrived while the loop was ending starts a new one.
      if ((this.#state === "running" || this.#state === "draining") && this.#waiting.length > 0) {
        this.#loop ??= this.#run();
      }
    }
  }

  /** Drop requests that ended (cancelled, failed) and release their KV. */
  #prune(): void {
    const keep = (r: OrtRequest) => {
      if (r.seq.signal.aborted) r.seq.cancel();
      if (!r.seq.finished && this.#state !== "stopped") return true;
      r.seq.cancel();
      r.dispose();
      return false;
    };
    this.#active = this.#active.filter(keep);
    this.#waiting = this.#waiting.filter(keep);
  }

  #failAll(error: EngineError): void {
    this.#inflight.failAll(error);
  }

  /** KV gauges: one "block" per request slot (ORT's KV is per request, not paged). */
  #report(): void {
    const max = this.#config?.max_num_seqs ?? 0;
    if (max === 0) return;
    const values: GaugeValues = {
      totalBlocks: max,
      usagePercent: this.#active.length / max,
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
  onGauges(
    cb: (
      values: { totalBlocks: number; usagePercent: number; hitRate: number | undefined },
    ) => void,
  ): void {
    this.#gaugeListeners.push(cb);
    this.#report();
  }

  /** End the request of `ctx`; its stream finishes `cancelled`. */
  abort(ctx: GenerateContext): Promise<void> {
    this.#inflight.abort(ctx);
    return Promise.resolve();
  }

  /** Refuse new requests and wait for the in-flight ones, at most `drainTimeoutMs`. */
  async drain(): Promise<void> {
    if (this.#state === "running") this.#state = "draining";
    await this.#inflight.settle(this.options.drainTimeoutMs ?? 30_000);
  }

  /** Cancel what is in flight and release the session and Kiln's GPU buffers. Idempotent. */
  async cleanup(): Promise<void> {
    if (this.#state === "stopped" || this.#state === "new") {
      this.#state = "stopped";
      return;
    }
    this.#state = "stopped";
    this.#inflight.cancelAll();
    await this.#loop?.catch(() => {});
    this.#prune();
    this.#guides?.close();
    await this.#release();
  }

  async #release(): Promise<void> {
    this.#ctx?.gpu?.destroy();
    const session = this.#opened?.session;
    this.#ctx = undefined;
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
    return this.#active.length + (this.#stepping === undefined ? 0 : 1);
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

function describeAdapter(device: GPUDevice): string {
  const info = (device as GPUDevice & { adapterInfo?: GPUAdapterInfo }).adapterInfo;
  return info ? [info.vendor, info.architecture, info.device].filter(Boolean).join(" ") : "";
}
