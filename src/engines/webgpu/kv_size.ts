/**
 * How many KV cache blocks the WebGPU engine allocates. WebGPU reports no device memory size,
 * only buffer limits, and the cache keeps each layer's keys (and values) in one buffer, so the
 * rule is:
 *
 * - asked for (`kvBlocks`, serve's `--kv-blocks`): that many (`source: "option"`; loading fails
 *   with `ResourceExhausted` when one layer's buffer would pass the device's limit);
 * - otherwise `KV_CONTEXTS` full contexts (`ceil(context / blockSize)` blocks each), so that
 *   many requests of the model's whole context can run at once (`source: "context"`),
 * - unless one layer's buffer would then pass `min(maxStorageBufferBindingSize, maxBufferSize)`:
 *   as many blocks as fit that buffer (`source: "limit"`),
 * - or unless the GPU memory budget has room for fewer after the weights and scratch
 *   (`memoryBlocks`, from `fit.ts`): that many (`source: "memory"`).
 *
 * When that is less than one context, a request ends with finish reason `length` when it fills
 * the cache.
 */
import { EngineError } from "../../contract/errors.ts";
import type { GpuCapabilities } from "../../gpu/device.ts";
import { kvBytesPerElement, type KvDtype } from "../../gpu/kernels/attention.ts";
import type { ModelConfig } from "../../model/config.ts";
import { kvLayers } from "../../model/layer_kinds.ts";

/** Full contexts the cache holds by default. */
export const KV_CONTEXTS = 4;

/** The chosen size, and the numbers behind it (reported in `EngineConfig.runtime_data`). */
export interface KvSize {
  /** Blocks in the cache. */
  blocks: number;
  /** Why that many: asked for, four contexts, the most one buffer holds, or the budget's room. */
  source: "option" | "context" | "limit" | "memory";
  /** Bytes of one layer's K buffer (V is the same). */
  layerBytes: number;
  /** Bytes of the whole cache: K and V of every layer. */
  totalBytes: number;
  /** The most bytes one buffer may hold on this device. */
  bufferLimit: number;
  /** The cache's element type. */
  dtype: KvDtype;
}

/**
 * Choose the cache's size for a model (see the module's rule): `requested` blocks when given,
 * else chosen from the context, `caps` and `memoryBlocks` (the most blocks the memory budget
 * has room for; at least one). Throws `InvalidArgument` on a bad `requested`.
 */
export function chooseKvSize(
  model: Pick<
    ModelConfig,
    "maxPositionEmbeddings" | "numLayers" | "numKvHeads" | "headDim" | "layerKinds"
  >,
  dtype: KvDtype,
  blockSize: number,
  caps: Pick<GpuCapabilities, "maxBufferSize" | "maxStorageBufferBindingSize">,
  requested?: number,
  memoryBlocks = Infinity,
): KvSize {
  const blockBytes = blockSize * model.numKvHeads * model.headDim * kvBytesPerElement(dtype);
  const bufferLimit = Math.min(caps.maxBufferSize, caps.maxStorageBufferBindingSize);
  const fit = Math.floor(bufferLimit / blockBytes);
  const wanted = KV_CONTEXTS * Math.ceil(model.maxPositionEmbeddings / blockSize);
  let blocks: number, source: KvSize["source"];
  if (requested !== undefined) {
    if (!Number.isInteger(requested) || requested < 1) {
      throw EngineError.invalidArgument(
        `kvBlocks: ${requested} is not a positive whole number of blocks`,
      );
    }
    [blocks, source] = [requested, "option"];
  } else if (wanted <= Math.min(fit, memoryBlocks)) [blocks, source] = [wanted, "context"];
  else if (fit <= memoryBlocks) [blocks, source] = [Math.max(1, fit), "limit"];
  else [blocks, source] = [Math.max(1, memoryBlocks), "memory"];
  const layerBytes = blocks * blockBytes;
  const totalBytes = 2 * kvLayers(model) * layerBytes;
  return { blocks, source, layerBytes, totalBytes, bufferLimit, dtype };
}

/** The size as `EngineConfig.runtime_data` entries (`kv_blocks`, `kv_blocks_source`, bytes). */
export function kvRuntimeData(kv: KvSize): Record<string, unknown> {
  return {
    kv_blocks: kv.blocks,
    kv_blocks_source: kv.source,
    kv_dtype: kv.dtype,
    kv_cache_bytes: kv.totalBytes,
    kv_layer_buffer_bytes: kv.layerBytes,
    kv_buffer_limit_bytes: kv.bufferLimit,
  };
}
