/**
 * A checkpoint on the GPU: weights uploaded one tensor at a time (no second full copy in
 * memory), a paged KV cache, and replayable forward plans (see `forward.ts`).
 *
 * The layout is the one the fused decode step reads: q, k and v stacked into one [q+2kv, h]
 * matrix (and their biases into one vector), gate and up into one [2i, h] matrix, and the norm
 * weights widened to f32 (they are read alongside x inside the products).
 */
import { EngineError } from "../contract/errors.ts";
import type { Gpu } from "../gpu/device.ts";
import { STORAGE, storageBuffer } from "../gpu/buffers.ts";
import type { TensorDtype, WeightDtype } from "../gpu/dtype.ts";
import type { ModelConfig } from "../model/config.ts";
import { kvBytesPerElement, type KvDtype } from "../gpu/kernels/attention.ts";
import type { GpuWeight } from "../gpu/product/product.ts";
import { uploadRopeFrequencies } from "../gpu/kernels/rope_frequencies.ts";
import { type Checkpoint, openCheckpoint } from "../model/checkpoint.ts";
import { ropeInvFreq } from "../model/rope.ts";
import type { ModelFiles } from "../formats/source.ts";
import { allocatePlan, type BufferPlan, fillPlan, planStack } from "./upload.ts";
import type { LoadOptionsOf, LoadProgress } from "./load_options.ts";
import { type GpuLayer, layerOnGpu } from "./gpu_layers.ts";
import { StagingWriter } from "./staging.ts";
import { hasKv, isRecurrent, layerKind } from "../model/layer_kinds.ts";
import { stateShape } from "../model/recurrent_state.ts";
import { checkFits, type ModelWeights, type WeightInfo, weightList } from "../model/weights.ts";

export type { GpuWeight, WeightPart } from "../gpu/product/product.ts";
export type { GpuExperts, GpuLayer } from "./gpu_layers.ts";
export type { LoadPhase, LoadProgress } from "./load_options.ts";

/** What {@linkcode GpuModel.load} takes: its options and the progress it reports. */
export type LoadOptions = LoadOptionsOf<GpuModel>;

/** The KV cache's element type unless told: f32 for f32 weights, else f16. */
export function defaultKvDtype(weights: ModelWeights<WeightInfo>): KvDtype {
  return weights.embed.dtype === "f32" ? "f32" : "f16";
}

/**
 * A checkpoint's weights, RoPE frequencies and KV cache on one GPU device; the buffers it owns are
 * freed by `destroy()`.
 */
export class GpuModel {
  readonly #owned: GPUBuffer[] = [];
  /** Per-layer weights, in order. */
  readonly layers: GpuLayer[] = [];
  /** Token embedding: [vocab, hidden]. */
  embed!: GpuWeight;
  /** LM head: [vocab, hidden] (the embedding itself when tied). */
  lmHead!: GpuWeight;
  /** The final RMSNorm weight, f32. */
  finalNorm!: GPUBuffer;
  /**
   * Key cache, one buffer per attention layer (`kvBlocks` blocks of `blockSize` tokens);
   * undefined at a recurrent layer, which keeps no keys.
   */
  readonly kCache: (GPUBuffer | undefined)[] = [];
  /** Value cache, as `kCache`. */
  readonly vCache: (GPUBuffer | undefined)[] = [];
  /**
   * Recurrent state per recurrent layer (undefined at attention layers), f32, per state slot: the
   * causal convolution's last `convWidth - 1` inputs per channel ([stateSlots, convWidth - 1,
   * channels]) and a Mamba2 scan's state ([stateSlots, heads, headDim, state]). A step's
   * sequences each name their slot (`StepBatch.stateSlots`).
   */
  readonly state: (LayerState | undefined)[] = [];
  /** RoPE inverse frequencies (with the config's scaling), as `uploadRopeFrequencies` stores them. */
  readonly ropeFrequencies: GPUBuffer;
  /** Those of sliding-window layers with a RoPE base of their own (`ropeLocalTheta`). */
  readonly ropeLocalFrequencies?: GPUBuffer;
  /**
   * The engine's context: the model's, or the whole KV cache's when that is smaller (the most
   * positions one sequence can reach, but for a window on every layer, which releases blocks).
   * LongRoPE chooses its factors by it (`ropeFactorList`), as llama.cpp by its context, so that
   * the same cache size gives the same rotation in the engine and in verify.
   */
  readonly context: number;
  /** The format the weights came in, and the dtype that holds most of their bytes. */
  readonly format: "safetensors" | "gguf";
  /** The dtype holding most of the weights' bytes. */
  readonly dtype: TensorDtype;

  private constructor(
    readonly gpu: Gpu,
    private readonly checkpoint: Checkpoint,
    readonly blockSize: number,
    readonly kvBlocks: number,
    readonly kvDtype: KvDtype,
    /** Sequences that may hold a recurrent state at once (1 for a model without recurrent layers). */
    readonly stateSlots: number,
  ) {
    this.format = checkpoint.format;
    this.context = Math.min(checkpoint.config.maxPositionEmbeddings, kvBlocks * blockSize);
    this.dtype = dominantDtype(weightList(checkpoint.weights));
    this.ropeFrequencies = this.own(
      uploadRopeFrequencies(
        gpu.device,
        "rope:frequencies",
        ropeInvFreq(
          this.config.rotaryDim ?? this.config.headDim,
          this.config.ropeTheta,
          this.config.ropeScaling,
          this.context,
        ),
      ),
    );
    const local = this.config.ropeLocalTheta;
    if (local !== undefined) {
      this.ropeLocalFrequencies = this.own(
        uploadRopeFrequencies(
          gpu.device,
          "rope:local_frequencies",
          ropeInvFreq(this.config.headDim, local, { type: "default" }),
        ),
      );
    }
  }

  /** The checkpoint's config. */
  get config(): ModelConfig {
    return this.checkpoint.config;
  }

  /** The checkpoint's tensor descriptions (not the GPU copies). */
  get weights(): ModelWeights<WeightInfo> {
    return this.checkpoint.weights;
  }

  /** Read the config and headers (safetensors or GGUF), check everything, upload the weights. */
  static async load(gpu: Gpu, files: ModelFiles, options: LoadOptions = {}): Promise<GpuModel> {
    return await GpuModel.fromCheckpoint(
      gpu,
      await openCheckpoint(files, options.onProgress),
      options,
    );
  }

  /**
   * Check an already opened checkpoint against the device's limits, upload its weights and allocate
   * the KV cache. Throws `InvalidArgument` when it does not fit.
   */
  static async fromCheckpoint(
    gpu: Gpu,
    checkpoint: Checkpoint,
    options: LoadOptions = {},
  ): Promise<GpuModel> {
    const { config, weights } = checkpoint;
    checkFits(weightList(weights), gpu.caps, options.weightBudget);
    const blockSize = options.blockSize ?? 16;
    const kvBlocks = options.kvBlocks ?? Math.ceil(config.maxPositionEmbeddings / blockSize);
    const kvDtype = options.kvDtype ?? defaultKvDtype(weights);
    const kvBytes = kvBlocks * blockSize * config.numKvHeads * config.headDim *
      kvBytesPerElement(kvDtype);
    const bufferLimit = Math.min(gpu.caps.maxStorageBufferBindingSize, gpu.caps.maxBufferSize);
    if (kvBytes > bufferLimit) {
      throw new EngineError(
        "ResourceExhausted",
        `a KV cache layer of ${kvBlocks} blocks needs ${kvBytes} bytes; one buffer may hold ${bufferLimit}`,
      );
    }
    const stateSlots = isRecurrent(config) ? options.stateSlots ?? 1 : 1;
    checkStateSlots(config, stateSlots, bufferLimit);
    const model = new GpuModel(gpu, checkpoint, blockSize, kvBlocks, kvDtype, stateSlots);
    const writer = new StagingWriter(gpu.device, options.upload);
    try {
      // Every buffer first (the fills queue behind), so that `beside` can build on the whole
      // model while its weights stream in.
      model.#allocateAll(writer, options.onProgress, options.maxSlabBytes);
      for (let l = 0; l < config.numLayers; l++) {
        const kv = hasKv(config, l);
        const buffer = (label: string, bytes: number, kind: "kv" | "state") =>
          model.own(storageBuffer(gpu.device, label, bytes, kind));
        model.kCache.push(kv ? buffer(`kv:k${l}`, kvBytes, "kv") : undefined);
        model.vCache.push(kv ? buffer(`kv:v${l}`, kvBytes, "kv") : undefined);
        const st = stateShape(config, layerKind(config, l));
        model.state.push(
          kv ? undefined : {
            conv: buffer(`state:conv${l}`, stateSlots * st.convRows * st.convChannels * 4, "state"),
            ...(st.ssmValues > 0
              ? { ssm: buffer(`state:ssm${l}`, stateSlots * st.ssmValues * 4, "state") }
              : {}),
          },
        );
      }
      const filled = model.#fills.then(() => writer.close());
      const beside = (async () => await options.beside?.(model))();
      // A failure on either side stops the fills still queued (a compile error need not wait
      // for gigabytes to upload); the first failure is thrown once both have settled.
      let first: { error: unknown } | undefined;
      await Promise.allSettled([
        filled.catch((error) => void (first ??= { error })),
        beside.catch((error) => {
          model.#stopped = true;
          first ??= { error };
        }),
      ]);
      if (first) throw first.error;
    } catch (e) {
      model.#stopped = true;
      model.destroy();
      throw e;
    } finally {
      writer.destroy();
      // The weights are on the GPU (or failed): drop any whole-file copy a source holds (a URL
      // whose server ignores Range), and close what a source opened to read them.
      for (const source of new Set(weightList(weights).map((t) => t.source))) {
        source.release?.();
      }
    }
    return model;
  }

  /**
   * Create every weight buffer of the model and queue its fill (`#fill`) from the file through
   * `writer`, in file order; the fills run behind, reporting `weights` progress in bytes.
   */
  #allocateAll(
    writer: StagingWriter,
    onProgress?: LoadProgress,
    maxSlabBytes = Infinity,
  ): void {
    const w = this.weights;
    const total = weightList(w).reduce((n, t) => n + t.length, 0);
    const caps = this.gpu.caps;
    const limit = Math.min(caps.maxStorageBufferBindingSize, caps.maxBufferSize);
    let loaded = 0;
    const progress = (bytes: number, name: string) => {
      loaded += bytes;
      onProgress?.(loaded, total, name, "weights");
    };
    const buffers = (plans: BufferPlan[]) => {
      const out = [];
      for (const p of plans) {
        const buffer = this.own(allocatePlan(this.gpu.device, p, STORAGE));
        this.#fill(() => fillPlan(p, buffer, progress, writer));
        out.push({
          buffer,
          dtype: p.dtype,
          rows: p.slices.reduce((n, s) => n + s.row1 - s.row0, 0),
        });
      }
      return out;
    };
    const weight = (label: string, ts: WeightInfo[]): GpuWeight => ({
      parts: buffers(planStack(label, ts, limit)),
    });
    const vector = (t: WeightInfo[], as: WeightDtype) => {
      const [one, ...more] = buffers(planStack(t[0]!.name, t, Infinity, as));
      if (more.length > 0 || !one) throw new Error(`${t[0]!.name}: not one buffer`);
      return one.buffer;
    };
    this.embed = weight(w.embed.name, [w.embed]);
    const made = { buffers, weight, vector, limit, maxSlabBytes };
    for (const l of w.layers) this.layers.push(layerOnGpu(l, made));
    this.finalNorm = vector([w.norm], "f32");
    this.lmHead = w.lmHead === w.embed ? this.embed : weight(w.lmHead.name, [w.lmHead]);
  }

  /** The weight buffers' fills, one after another in file order (`#fill`). */
  #fills: Promise<void> = Promise.resolve();
  /** A load failed: fills not yet begun are not begun. */
  #stopped = false;

  /** Queue `job` after the fills before it (skipped once one fails or the load stops). */
  #fill(job: () => Promise<void>): void {
    this.#fills = this.#fills.then(() => {
      if (this.#stopped) throw new EngineError("Cancelled", "the model's load stopped");
      return job();
    });
    // Handled where it is awaited; until then a failure must not count as unhandled.
    this.#fills.catch(() => {});
  }

  /** Register `buffer` to be destroyed with the model; returns it. */
  own(buffer: GPUBuffer): GPUBuffer {
    this.#owned.push(buffer);
    return buffer;
  }

  /** Free every buffer this model owns. Safe to call twice. */
  destroy(): void {
    for (const b of this.#owned.splice(0)) b.destroy();
  }
}

/** One recurrent layer's state buffers (see `GpuModel.state`). */
export interface LayerState {
  /** The causal convolution's last inputs, [stateSlots, convWidth - 1, channels]. */
  conv: GPUBuffer;
  /** A Mamba2 scan's state, [stateSlots, heads, headDim, state]. */
  ssm?: GPUBuffer;
}

/** `slots` recurrent states fit one buffer per layer and kind; else `InvalidArgument`. */
function checkStateSlots(config: ModelConfig, slots: number, bufferLimit: number): void {
  const kinds = new Set(config.layerKinds ?? []);
  const most = Math.max(
    0,
    ...[...kinds].map((k) => {
      const s = stateShape(config, k);
      return Math.max(s.convRows * s.convChannels, s.ssmValues) * 4;
    }),
  );
  if (!Number.isInteger(slots) || slots < 1 || slots * most > bufferLimit) {
    throw EngineError.invalidArgument(
      `stateSlots: ${slots} recurrent states need ${
        slots * most
      } bytes in one buffer; one buffer may hold ${bufferLimit}`,
    );
  }
}

/** The dtype holding the most bytes among `tensors` (a Q4_K_M file's is Q4_K). */
function dominantDtype(tensors: readonly WeightInfo[]): TensorDtype {
  const bytes = new Map<TensorDtype, number>();
  for (const t of tensors) bytes.set(t.dtype, (bytes.get(t.dtype) ?? 0) + t.length);
  return [...bytes].reduce((a, b) => (b[1] > a[1] ? b : a))[0];
}
