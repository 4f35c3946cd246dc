/**
 * The parts a started {@linkcode WebGpuEngine} runs on, built in order from its options and a
 * device: the checkpoint on the GPU, the token store, forward pass, sampler and read-back, the
 * pipelines compiled ahead (warm-up), the KV block manager and the scheduler, and the
 * `EngineConfig` that `start()` returns.
 *
 * @module
 */
import { EngineError } from "../../contract/errors.ts";
import { withLlm } from "../../contract/engine_hooks.ts";
import type { KvCacheEvent } from "../../contract/kv_events.ts";
import type { EngineConfig } from "../../contract/types.ts";
import { type Gpu, runtimeData } from "../../gpu/device.ts";
import type { KvDtype } from "../../gpu/kernels/attention.ts";
import { Sampler } from "../../gpu/kernels/sampling.ts";
import { kvWindow } from "../../model/attention_knobs.ts";
import { isRecurrent, kvLayers } from "../../model/layer_kinds.ts";
import { sequenceStateBytes } from "../../model/recurrent_state.ts";
import { type Checkpoint, prepareWeights, readHeaders } from "../../model/checkpoint.ts";
import { Forward } from "../../runtime/forward.ts";
import { defaultKvDtype, GpuModel } from "../../runtime/gpu_model.ts";
import type { LoadProgress } from "../../runtime/load_options.ts";
import { BlockManager } from "./block_manager.ts";
import { routerHash } from "../router_hash.ts";
import { chooseKvSize, kvRuntimeData, type KvSize } from "./kv_size.ts";
import { type Fit, fitModel, fitRuntimeData, memoryBudget } from "./fit.ts";
import { memoryLedger } from "../../gpu/memory_ledger.ts";
import { weightList } from "../../model/weights.ts";
import type { WebGpuEngineOptions } from "./options.ts";
import { Readback } from "../readback.ts";
import { Scheduler } from "./scheduler.ts";
import { TokenStore } from "./token_store.ts";
import { warmUp, type WarmUpReport } from "./warmup.ts";
import {
  speculativeRuntimeData,
  type SpeculativeSettings,
  speculativeSettings,
} from "../speculation.ts";
import { ngramDrafter } from "../prompt_lookup.ts";
import { type DraftHooks, modelDrafter } from "../draft_model.ts";
import { checkDraftVocab, type StartedDraft } from "./draft_engine.ts";

/** What a started engine holds. */
export interface EngineParts {
  model: GpuModel;
  tokens: TokenStore;
  forward: Forward;
  sampler: Sampler;
  readback: Readback;
  blocks: BlockManager;
  scheduler: Scheduler;
  config: EngineConfig;
  warmUpReport: WarmUpReport | undefined;
}

/** A started draft model, and the target's hooks its drafter calls. */
export interface DraftParts {
  started: StartedDraft;
  hooks: DraftHooks;
}

/** The parts built while the weights upload (`beside`): all but those needing the whole model. */
type BesideParts = Omit<EngineParts, "model" | "blocks" | "scheduler" | "config">;

/** The engine's sizes, from its options and the checkpoint's headers, before any weight is read. */
interface EngineSizes {
  checkpoint: Checkpoint;
  /** Tokens per KV block. */
  blockSize: number;
  /** The model's context (its maximum position embeddings). */
  context: number;
  kvDtype: KvDtype;
  maxNumSeqs: number;
  maxNumBatchedTokens: number;
  /** Logit rows a step may sample. */
  maxRows: number;
  /** The speculative decoding settings, when `o.speculative` asks for it. */
  spec: SpeculativeSettings | undefined;
  /** The fit of the model (and the KV blocks it leaves room for) in the memory budget. */
  fit: Fit;
  /** The KV cache's size. */
  kv: KvSize;
}

/**
 * Build the engine's parts on `gpu`; `onKvEvent` receives the block manager's events, `draft`
 * is the draft model's engine when `o.speculative` names one.
 */
export async function assembleEngine(
  o: WebGpuEngineOptions,
  gpu: Gpu,
  onKvEvent: (e: KvCacheEvent) => void,
  draft?: DraftParts,
): Promise<EngineParts> {
  const s = await sizeEngine(o, gpu, draft);
  const { blockSize, maxNumSeqs, maxNumBatchedTokens, spec, kv } = s;
  // Only now, with the fit known, download (or resume) the weight files into the store.
  await prepareWeights(o.files, s.checkpoint, o.onLoadProgress);
  // The pipelines compile while the weights upload (`beside`).
  const phases = loadPhases(o.onLoadProgress);
  let built: BesideParts | undefined;
  const model = await GpuModel.fromCheckpoint(gpu, s.checkpoint, {
    blockSize,
    kvBlocks: kv.blocks,
    stateSlots: maxNumSeqs,
    kvDtype: s.kvDtype,
    ...(phases.weights ? { onProgress: phases.weights } : {}),
    ...(o.upload ? { upload: o.upload } : {}),
    beside: async (model) => {
      built = await buildBeside(o, gpu.device, model, s, phases.pipelines);
    },
  });
  phases.weightsDone();
  const { tokens, forward, sampler, readback, warmUpReport } = built!;
  const blocks = new BlockManager({
    numBlocks: kv.blocks,
    blockSize,
    onEvent: onKvEvent,
    routerHash: await routerHash(),
    // A recurrent layer's state at a block boundary is in no block: no prefix can be reused.
    prefixCaching: !isRecurrent(model.config),
  });
  const keyWindow = kvWindow(model.config, model.config.numLayers);
  const scheduler = new Scheduler(
    blocks,
    { maxNumSeqs, maxNumBatchedTokens, kvWindow: keyWindow },
    tokens,
    spec?.method === "ngram"
      ? ngramDrafter(spec)
      : draft && modelDrafter(spec!.numSpeculativeTokens, draft.started, draft.hooks),
  );
  const config = engineConfig(o, gpu, s, model, keyWindow, draft);
  return { model, tokens, forward, sampler, readback, blocks, scheduler, config, warmUpReport };
}

/**
 * Read the checkpoint's headers and size the engine from them and `o`: the step limits, and,
 * refusing what cannot fit, the KV cache from the memory the rest leaves.
 */
async function sizeEngine(
  o: WebGpuEngineOptions,
  gpu: Gpu,
  draft: DraftParts | undefined,
): Promise<EngineSizes> {
  const blockSize = o.blockSize ?? 16;
  const checkpoint = await readHeaders(o.files);
  if (draft) checkDraftVocab(draft.started, checkpoint.config.vocabSize);
  const context = checkpoint.config.maxPositionEmbeddings;
  const kvDtype = defaultKvDtype(checkpoint.weights);
  const maxNumSeqs = o.maxNumSeqs ?? 16;
  const maxNumBatchedTokens = Math.max(o.maxNumBatchedTokens ?? 256, maxNumSeqs);
  const spec = o.speculative && speculativeSettings(o.speculative);
  if (spec && isRecurrent(checkpoint.config)) {
    throw EngineError.invalidField(
      "speculative",
      `speculative decoding is not supported on ${checkpoint.config.arch}: its recurrent ` +
        "layers would need their state rolled back past a rejected draft",
    );
  }
  // Logit rows a step may sample: one per sequence, and one per drafted token.
  const maxRows = Math.min(
    maxNumSeqs * (1 + (spec?.numSpeculativeTokens ?? 0)),
    maxNumBatchedTokens,
  );
  // From the headers, before any weight is read: refuse what cannot fit, size the KV from the rest.
  const fit = fitModel(
    checkpoint.config,
    weightList(checkpoint.weights),
    { dtype: kvDtype, blockSize, ...(o.kvBlocks === undefined ? {} : { requested: o.kvBlocks }) },
    { maxNumSeqs, maxNumBatchedTokens, maxRows },
    memoryBudget(o.gpuMemoryBytes),
  );
  const kv = chooseKvSize(
    checkpoint.config,
    kvDtype,
    blockSize,
    gpu.caps,
    o.kvBlocks,
    Math.max(maxNumSeqs, fit.kvBlocks),
  );
  return {
    checkpoint,
    blockSize,
    context,
    kvDtype,
    maxNumSeqs,
    maxNumBatchedTokens,
    maxRows,
    spec,
    fit,
    kv,
  };
}

/** The load's two progress phases, reported one after the other (see {@linkcode loadPhases}). */
interface LoadPhases {
  /** Reports the weights' upload. */
  weights: LoadProgress | undefined;
  /** Reports the pipelines' compiling (warm-up). */
  pipelines: ((n: number, total: number, label: string) => void) | undefined;
  /** Marks the weights uploaded, releasing a held-back pipelines report. */
  weightsDone: () => void;
}

/**
 * Split `progress` into the weights' and the pipelines' reports: the warm-up's progress is held
 * back until the weights' last report, so that the phases are reported one after the other.
 */
function loadPhases(progress: LoadProgress | undefined): LoadPhases {
  let uploaded = false;
  let heldBack: (() => void) | undefined;
  const weightsDone = () => {
    uploaded = true;
    heldBack?.();
    heldBack = undefined;
  };
  const weights: LoadProgress | undefined = progress &&
    ((done, total, item, phase, download) => {
      progress(done, total, item, phase, download);
      if (phase === "weights" && done >= total) weightsDone();
    });
  const pipelines = progress &&
    ((n: number, total: number, label: string) => {
      const report = () => progress(n, total, label, "pipelines");
      if (uploaded) report();
      else heldBack = report;
    });
  return { weights, pipelines, weightsDone };
}

/**
 * What runs while the weights upload: the token store, forward pass, sampler and read-back on
 * `model`'s buffers, and (unless `o.warmUp` is false) the warm-up compiling their pipelines.
 */
async function buildBeside(
  o: WebGpuEngineOptions,
  device: GPUDevice,
  model: GpuModel,
  s: EngineSizes,
  pipelinesProgress: LoadPhases["pipelines"],
): Promise<BesideParts> {
  const tokens = new TokenStore(device, s.maxNumSeqs, s.context, s.maxRows);
  const forward = new Forward(model, { tokensFrom: tokens.buffer });
  const sampler = new Sampler(device, s.maxRows, model.config.vocabSize, {
    history: tokens.buffer,
    ...(o.tokenMaskPath ? { maskPath: o.tokenMaskPath } : {}),
  });
  const readback = new Readback(device, sampler);
  const built: BesideParts = { tokens, forward, sampler, readback, warmUpReport: undefined };
  if (o.warmUp ?? true) {
    built.warmUpReport = await warmUp({
      device,
      forward,
      sampler,
      tokens,
      maxTokens: s.maxNumBatchedTokens,
      maxSeqs: s.maxRows,
    }, pipelinesProgress);
  }
  return built;
}

/** The `EngineConfig` that `start()` returns, its `runtime_data` read from the parts built. */
function engineConfig(
  o: WebGpuEngineOptions,
  gpu: Gpu,
  s: EngineSizes,
  model: GpuModel,
  keyWindow: ReturnType<typeof kvWindow>,
  draft: DraftParts | undefined,
): EngineConfig {
  const { spec } = s;
  return withLlm({
    model: o.name,
    ...(o.servedModelName ? { served_model_name: o.servedModelName } : {}),
    context_length: s.context,
    kv_cache_block_size: s.blockSize,
    total_kv_blocks: s.kv.blocks,
    max_num_seqs: s.maxNumSeqs,
    max_num_batched_tokens: s.maxNumBatchedTokens,
    runtime_data: {
      ...runtimeData(gpu.caps),
      engine: "webgpu",
      weights_format: model.format,
      weights_dtype: model.dtype,
      ...kvRuntimeData(s.kv),
      kv_window: keyWindow,
      ...recurrentRuntimeData(model),
      ...(spec
        ? {
          speculative: speculativeRuntimeData(
            spec,
            draft
              ? {
                draft_model: draft.started.config.model,
                draft_kv_blocks: draft.started.config.total_kv_blocks ?? 0,
              }
              : {},
          ),
        }
        : {}),
      ...fitRuntimeData(s.fit),
      gpu_memory_bytes: memoryLedger(gpu.device).snapshot(),
    },
  });
}

/**
 * A hybrid model's recurrent layers in `runtime_data`: how many, the state one sequence holds,
 * the slots allocated, and that prefix caching is off (and why). Nothing for other models.
 */
function recurrentRuntimeData(model: GpuModel): Record<string, unknown> {
  const c = model.config;
  if (!isRecurrent(c)) return { prefix_caching: true };
  return {
    prefix_caching: false,
    prefix_caching_off_because:
      "recurrent layers keep one state per sequence, not per block: a cached prefix's KV " +
      "would come without the state after it",
    recurrent: {
      layer_kinds: c.layerKinds,
      recurrent_layers: c.numLayers - kvLayers(c),
      state_bytes_per_sequence: sequenceStateBytes(c),
      state_slots: model.stateSlots,
    },
  };
}
