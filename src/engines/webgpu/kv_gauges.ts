/**
 * The KV cache gauges a `WebGpuEngine` reports after every step: to the component gauges of its
 * metrics (once `setupMetrics` binds them) and to listeners (the worker host forwards them).
 */
import type { ComponentGauges } from "../../metrics/engine_metrics.ts";
import type { BlockManager } from "./block_manager.ts";
import type { SpeculationCounts } from "../speculation.ts";

/** One report: blocks in the cache, the fraction in use, the prefix-cache hit rate. */
export interface KvGaugeValues {
  /** KV blocks in the cache. */
  totalBlocks: number;
  /** The fraction of them in use (0 to 1). */
  usagePercent: number;
  /** Prefix-cache hits over lookups, undefined before the first lookup. */
  hitRate: number | undefined;
  /** Speculative decoding's counts so far (with `speculative` on). */
  speculation?: SpeculationCounts;
}

export class KvGauges {
  #metrics: ComponentGauges | undefined;
  #listeners: ((values: KvGaugeValues) => void)[] = [];

  /** Report to `gauges` from now on. */
  bind(gauges: ComponentGauges): void {
    this.#metrics = gauges;
  }

  /** Call `cb` with every report from now on. */
  listen(cb: (values: KvGaugeValues) => void): void {
    this.#listeners.push(cb);
  }

  /**
   * Report `blocks`' state, and to listeners the speculation counts (nothing before the engine
   * has a cache).
   */
  report(blocks: BlockManager | undefined, speculation?: SpeculationCounts): void {
    if (!blocks) return;
    const values: KvGaugeValues = {
      totalBlocks: blocks.numBlocks,
      usagePercent: blocks.used / blocks.numBlocks,
      hitRate: blocks.hitRate,
      ...(speculation && speculation.numSpecTokens > 0 ? { speculation } : {}),
    };
    this.#metrics?.setTotalBlocks(values.totalBlocks);
    this.#metrics?.setGpuCacheUsagePercent(values.usagePercent);
    this.#metrics?.setKvCacheHitRate(values.hitRate);
    for (const cb of this.#listeners) cb(values);
  }
}
