/**
 * The load gauges KV-aware routers and autoscalers scrape, under the names they look for:
 *
 * - Dynamo's (`dynamo_component_kvstats_*`, and `dynamo_component_inflight_requests`):
 *   active and total KV blocks, the fraction in use and the prefix-cache hit rate, with the
 *   hierarchy labels every component metric carries;
 * - vLLM's, which llm-d's and the Gateway API inference extension's schedulers read
 *   (`vllm:num_requests_running`, `vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc`, and
 *   its older name `vllm:gpu_cache_usage_perc`), labelled `model_name` as vLLM labels them.
 *
 * @module
 */
import type { EngineMetrics } from "../contract/metrics/engine_metrics.ts";
import type { Gauge } from "../contract/metrics/registry.ts";

/** An engine's requests and the blocks they hold, at one moment. */
export interface EngineLoad {
  /** Requests admitted to the batch (prefilling or decoding). */
  running: number;
  /** Requests queued for room. */
  waiting: number;
  /** KV blocks referenced by running requests. */
  activeBlocks: number;
}

/** A report of an engine's KV gauges with its load (as `KvGaugeValues` and the worker's carry it). */
export interface LoadReport {
  /** KV blocks in the cache. */
  totalBlocks: number;
  /** The fraction (0 to 1) of them in use. */
  usagePercent: number;
  /** Prefix-cache hits over lookups; undefined before the first (the series stays absent). */
  hitRate: number | undefined;
  /** Requests running and waiting, and blocks in use. */
  load: EngineLoad;
}

/** The router gauges of each `EngineMetrics` (registered once, as the registry requires). */
const made = new WeakMap<EngineMetrics, RouterGauges>();

/** `metrics`' router gauges, registered on first use. */
export function routerGauges(metrics: EngineMetrics): RouterGauges {
  let g = made.get(metrics);
  if (g === undefined) made.set(metrics, g = new RouterGauges(metrics));
  return g;
}

/** The gauges of one engine (see {@linkcode routerGauges}, which makes one per metrics). */
export class RouterGauges {
  readonly #dynamo: Record<"active" | "total" | "usage" | "hitRate" | "inflight", Gauge>;
  readonly #vllm: Record<"running" | "waiting" | "usage" | "usageOld", Gauge>;
  readonly #dynamoLabels: Record<string, string>;
  readonly #vllmLabels: Record<string, string>;

  /** Register the gauges on `metrics`, for data-parallel rank `dpRank`. */
  constructor(metrics: EngineMetrics, dpRank = 0) {
    const dyn = (name: string, help: string) =>
      metrics.gauge(name, help, metrics.model, ["dp_rank"]);
    this.#dynamo = {
      active: dyn("kvstats_active_blocks", "KV cache blocks in use by running requests."),
      total: dyn("kvstats_total_blocks", "KV cache blocks on the worker."),
      usage: dyn("kvstats_gpu_cache_usage_percent", "Fraction (0 to 1) of KV cache blocks in use."),
      hitRate: dyn("kvstats_gpu_prefix_cache_hit_rate", "Prefix cache hit rate (0 to 1)."),
      inflight: dyn("inflight_requests", "Requests in the engine, running or waiting."),
    };
    this.#dynamoLabels = { dp_rank: String(dpRank) };
    const vllm = (name: string, help: string) =>
      metrics.registry.gauge({ name: `vllm:${name}`, help, labelNames: ["model_name"] });
    this.#vllm = {
      running: vllm("num_requests_running", "Requests admitted to execution, prefill included."),
      waiting: vllm("num_requests_waiting", "Requests waiting to be scheduled."),
      usage: vllm("kv_cache_usage_perc", "KV cache usage (0 to 1)."),
      usageOld: vllm("gpu_cache_usage_perc", "KV cache usage (0 to 1); the older name."),
    };
    this.#vllmLabels = { model_name: metrics.model.model_name ?? "" };
  }

  /** Set every gauge from `r`. */
  report(r: LoadReport): void {
    const { load, usagePercent: usage } = r;
    const d = this.#dynamoLabels, v = this.#vllmLabels;
    this.#dynamo.active.set(load.activeBlocks, d);
    this.#dynamo.total.set(r.totalBlocks, d);
    this.#dynamo.usage.set(usage, d);
    if (r.hitRate !== undefined) this.#dynamo.hitRate.set(r.hitRate, d);
    this.#dynamo.inflight.set(load.running + load.waiting, d);
    this.#vllm.running.set(load.running, v);
    this.#vllm.waiting.set(load.waiting, v);
    this.#vllm.usage.set(usage, v);
    this.#vllm.usageOld.set(usage, v);
  }
}
