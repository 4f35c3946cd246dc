/**
 * Fit before load: from a checkpoint's headers alone (no weight byte read), the GPU memory the
 * engine will need, against a budget, so that a model that cannot fit is refused before its
 * upload with `ResourceExhausted` naming the bytes needed and available, and the KV cache is
 * sized from what is left.
 *
 * - **budget**: the engine option `gpuMemoryBytes`; else, where the page says its device memory
 *   (`navigator.deviceMemory`, GiB of RAM, which browsers round and cap at 8), half of it;
 *   else {@linkcode DEFAULT_GPU_MEMORY_BYTES} (4 GiB). WebGPU reports no memory size, so the
 *   budget is a statement, not a measurement.
 * - **weights**: every tensor's bytes as the file stores them, float vectors (norms, biases)
 *   widened to f32 as the upload does.
 * - **scratch**: the forward pass's activations and logits for `maxNumBatchedTokens` tokens, the
 *   sampler's per-sequence vocabulary rows, the token store (`maxNumSeqs` contexts of ids), the
 *   read-back and upload staging, and the split attention partials of a CPU adapter (32 MiB).
 * - **recurrent state** (hybrid models): each recurrent layer's state for `maxNumSeqs`
 *   sequences (a short convolution's last inputs), allocated whole at load.
 * - **minimum KV**: one block per sequence that may run at once (`maxNumSeqs` blocks): the
 *   least the engine can serve with (requests end with `length` when the cache fills). One full
 *   context is not required: a 128k-token context can need more than a whole GPU.
 *
 * The default KV size is then min(`KV_CONTEXTS` contexts, the buffer limit, what the budget has
 * left after weights and scratch) (`kv_size.ts`; `kv_blocks_source: "memory"` when the budget
 * decides).
 *
 * @module
 */
import { ROWS_PARTIAL_BYTES } from "../../runtime/step_plan.ts";
import { EngineError } from "../../contract/errors.ts";
import { isFloatDtype } from "../../gpu/dtype.ts";
import { kvBytesPerElement, type KvDtype } from "../../gpu/kernels/attention.ts";
import type { ModelConfig } from "../../model/config.ts";
import { STAGING_BUFFERS, STAGING_CHUNK_BYTES } from "../../runtime/staging.ts";
import type { WeightInfo } from "../../model/weights.ts";
import { isRecurrent, kvLayers } from "../../model/layer_kinds.ts";
import { sequenceStateBytes } from "../../model/recurrent_state.ts";

const GiB = 1024 ** 3;
/** The budget where neither the option nor the device's memory says one: 4 GiB. */
export const DEFAULT_GPU_MEMORY_BYTES = 4 * GiB;

/** The memory budget and where it came from. */
export interface MemoryBudget {
  bytes: number;
  source: "option" | "device_memory" | "default";
}

/** The budget: `option`, else half of `deviceMemory` GiB (the page's), else 4 GiB. */
export function memoryBudget(
  option?: number,
  deviceMemory = (globalThis as { navigator?: { deviceMemory?: number } }).navigator
    ?.deviceMemory,
): MemoryBudget {
  if (option !== undefined) {
    if (!Number.isFinite(option) || option <= 0) {
      throw EngineError.invalidField("gpuMemoryBytes", `${option} is not a positive byte count`);
    }
    return { bytes: option, source: "option" };
  }
  if (typeof deviceMemory === "number" && deviceMemory > 0) {
    return { bytes: Math.floor((deviceMemory * GiB) / 2), source: "device_memory" };
  }
  return { bytes: DEFAULT_GPU_MEMORY_BYTES, source: "default" };
}

/** The bytes the weights take on the GPU, from their headers. */
export function weightBytes(tensors: readonly WeightInfo[]): number {
  let n = 0;
  for (const t of tensors) {
    const elements = t.shape.reduce((a, b) => a * b, 1);
    const widened = t.shape.length <= 1 && isFloatDtype(t.dtype) ? elements * 4 : t.length;
    n += Math.ceil(Math.max(t.length, widened) / 4) * 4;
  }
  return n;
}

/** How many sequences and tokens a step carries. */
export interface StepLimits {
  maxNumSeqs: number;
  maxNumBatchedTokens: number;
  /** Logit rows the sampler holds (default `maxNumSeqs`; more with speculative decoding). */
  maxRows?: number;
}

/**
 * The scratch estimate (see the module): activations, logits, sampler, token store, staging,
 * attention partials.
 */
export function scratchBytes(c: ModelConfig, s: StepLimits): number {
  const tokens = Math.max(16, s.maxNumBatchedTokens);
  const q = c.numHeads * c.headDim, kv = c.numKvHeads * c.headDim;
  const widest = Math.max(c.hiddenSize, c.intermediateSize, q);
  const moe = c.moe
    ? c.moe.experts + 2 * c.moe.topK + c.moe.topK * c.moe.expertIntermediateSize
    : 0;
  // A convolution layer's B | C | x rows widen the q/k/v scratch.
  const qkv = Math.max(q + 2 * kv, isRecurrent(c) ? 3 * c.hiddenSize : 0);
  const perToken = 6 + 3 * c.hiddenSize + qkv + 2 * q + 3 * c.intermediateSize + widest +
    c.vocabSize + moe;
  const forward = tokens * perToken * 4;
  const sampler = (s.maxRows ?? s.maxNumSeqs) *
    (2 * c.vocabSize * 4 + 2 * Math.ceil(c.vocabSize / 32) * 4 + 1024);
  const tokenStore = s.maxNumSeqs * c.maxPositionEmbeddings * 4;
  const staging = STAGING_BUFFERS * STAGING_CHUNK_BYTES;
  // A CPU adapter's split attention partials (counted on every adapter: the fit is decided from
  // the headers, before the device's paths matter).
  return forward + sampler + tokenStore + staging + ROWS_PARTIAL_BYTES;
}

/** Bytes of one KV block over every attention layer, K and V. */
export function kvBlockBytes(
  c: Pick<ModelConfig, "numLayers" | "numKvHeads" | "headDim" | "layerKinds">,
  dtype: KvDtype,
  blockSize: number,
): number {
  return 2 * kvLayers(c) * blockSize * c.numKvHeads * c.headDim * kvBytesPerElement(dtype);
}

/** What the fit found: the budget, the estimates, what is left for the KV cache. */
export interface Fit {
  budget: MemoryBudget;
  weights: number;
  scratch: number;
  /** The least KV cache the engine starts with (one block per sequence). */
  minKv: number;
  /** Recurrent layers' state: one per sequence that may run at once (0 without such layers). */
  state: number;
  /** Budget minus weights, scratch and recurrent state. */
  left: number;
  /** The most KV blocks `left` holds. */
  kvBlocks: number;
}

/**
 * Check that weights + scratch + the minimum KV fit the budget, before any weight is read;
 * throws `ResourceExhausted` naming the bytes needed and available. `kvBlocks`, when asked for
 * explicitly, is the KV that must fit instead of the minimum.
 */
export function fitModel(
  config: ModelConfig,
  tensors: readonly WeightInfo[],
  kv: { dtype: KvDtype; blockSize: number; requested?: number },
  steps: StepLimits,
  budget: MemoryBudget,
): Fit {
  const weights = weightBytes(tensors);
  const scratch = scratchBytes(config, steps);
  const perBlock = kvBlockBytes(config, kv.dtype, kv.blockSize);
  const minKv = (kv.requested ?? steps.maxNumSeqs) * perBlock;
  const state = steps.maxNumSeqs * sequenceStateBytes(config);
  const need = weights + scratch + state + minKv;
  const name = budget.source === "option"
    ? "the gpuMemoryBytes option"
    : budget.source === "device_memory"
    ? "half of navigator.deviceMemory"
    : "the default GPU memory budget (set gpuMemoryBytes)";
  if (need > budget.bytes) {
    throw new EngineError(
      "ResourceExhausted",
      `the model needs ${need} bytes of GPU memory (weights ${weights}, scratch ${scratch}, ` +
        `${
          state > 0 ? `recurrent state ${state}, ` : ""
        }KV cache ${minKv}); ${name} allows ${budget.bytes}`,
    );
  }
  const left = budget.bytes - weights - scratch - state;
  return { budget, weights, scratch, minKv, state, left, kvBlocks: Math.floor(left / perBlock) };
}

/** The fit as `EngineConfig.runtime_data` entries. */
export function fitRuntimeData(f: Fit): Record<string, unknown> {
  return {
    gpu_memory_budget_bytes: f.budget.bytes,
    gpu_memory_budget_source: f.budget.source,
    gpu_memory_estimate_bytes: {
      weights: f.weights,
      scratch: f.scratch,
      min_kv: f.minKv,
      ...(f.state > 0 ? { recurrent_state: f.state } : {}),
    },
    gpu_memory_left_for_kv_bytes: f.left,
  };
}
