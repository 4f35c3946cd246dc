/**
 * The WebGPU engine: continuous batching over a paged, prefix-cached KV cache on one device.
 * @module
 */
export { WebGpuEngine, type WebGpuEngineOptions } from "./engine.ts";
export type { GuidedForcing } from "../token_mask.ts";
export type { GuidedLimits } from "../guided/limits.ts";
export type { StepCounts } from "./step_counts.ts";
export type {
  DraftModelOptions,
  NgramOptions,
  SpeculationCounts,
  SpeculativeOptions,
} from "../speculation.ts";
export { promptLookup } from "../prompt_lookup.ts";
export type { KvGaugeValues } from "./kv_gauges.ts";
export { type StepShape, warmShapes, type WarmUpReport } from "./warmup.ts";
export type { RequestStats } from "../live_requests.ts";
export type { TokenMaskProvider } from "../token_mask.ts";
export { freeMask, maskWords, tokenBitmask } from "../../gpu/token_mask_bits.ts";
export {
  BlockManager,
  type BlockManagerOptions,
  type BlockPrefix,
  type SeqBlocks,
} from "./block_manager.ts";
export type { BlockKey } from "../block_hash.ts";
export { type RouterHash, routerHash, routerHashes } from "../router_hash.ts";
