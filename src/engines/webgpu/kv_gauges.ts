/**
 * The KV cache gauges a `WebGpuEngine` reports after every step: to the component gauges of its
 * metrics (once `setupMetrics` binds them) and to listeners (the worker host forwards them).
 */
import type { ComponentGauges } from "../../contract/metrics/engine_metrics.ts";
import type { EngineLoad, RouterGauges } from "../../metrics/router_gauges.ts";
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
  /** Whether cached prefixes are reused (not for a model with recurrent layers). */
  prefixCaching?: boolean;
  /** Speculative decoding's counts so far (with `speculative` on). */
  speculation?: SpeculationCounts;
  /** Requests running and waiting, and blocks in use: what routers scrape (`RouterGauges`). */
  load?: EngineLoad;
}

export class KvGauges {
  #metrics: ComponentGauges | undefined;
  #router: RouterGauges | undefined;
  #listeners: ((values: KvGaugeValues) => void)[] = [];

  /** Report to `gauges` (and the routers' gauges) from now on. */
  bind(gauges: ComponentGauges, router?: RouterGauges): void {
    this.#metrics = gauges;
    this.#router = router;
  }

  /** Call `cb` with every report from now on. */
  listen(cb: (values: KvGaugeValues) => void): void {
    this.#listeners.push(cb);
  }

  /**
   * Report `blocks`' state and the requests `running` and `waiting`, and to listeners the
   * speculation counts (nothing before the engine has a cache).
   */
  report(
    blocks: BlockManager | undefined,
    requests: { running: number; waiting: number },
    speculation?: SpeculationCounts,
  ): void {
    if (!blocks) return;
    const used = blocks.used; // a count over every block: taken once a report
    const values = {
      totalBlocks: blocks.numBlocks,
      usagePercent: used / blocks.numBlocks,
      hitRate: blocks.hitRate,
      prefixCaching: blocks.prefixCaching,
      ...(speculation && speculation.numSpecTokens > 0 ? { speculation } : {}),
      load: { ...requests, activeBlocks: used },
    };
    this.#metrics?.setTotalBlocks(values.totalBlocks);
    this.#metrics?.setGpuCacheUsagePercent(values.usagePercent);
    this.#metrics?.setKvCacheHitRate(values.hitRate);
    this.#metrics?.setPrefixCaching(values.prefixCaching);
    this.#router?.report(values);
    for (const cb of this.#listeners) cb(values);
  }
}
