/**
 * `EngineMetrics`, the metrics handle an engine receives in `setupMetrics` (part of the contract:
 * `MetricsContext` names it), modelled on Dynamo's backend-common: every metric it creates is
 * named `dynamo_component_<name>` and carries the hierarchy's auto-injected labels (namespace,
 * component, endpoint, worker id in hex) plus `model` / `model_name` when built with an
 * `EngineConfig`.
 */
import type { EngineConfig } from "../types.ts";
import { EngineError } from "../errors.ts";
import { negotiate, render } from "./exposition.ts";
import {
  type Counter,
  type ExpfmtCallback,
  type Gauge,
  type Labels,
  Registry,
} from "./registry.ts";

/** The label names Dynamo's metrics use (hierarchy, `dp_rank`, model identity). */
export const LABELS = {
  namespace: "dynamo_namespace",
  component: "dynamo_component",
  endpoint: "dynamo_endpoint",
  workerId: "worker_id",
  dpRank: "dp_rank",
  model: "model",
  modelName: "model_name",
} as const;

const COMPONENT_PREFIX = "dynamo_component_";

/** Where an engine sits: Dynamo's namespace / component / endpoint and its worker (lease) id. */
export interface MetricsHierarchy {
  /** Dynamo namespace (label `dynamo_namespace`; omitted when empty). */
  namespace: string;
  /** Dynamo component (label `dynamo_component`; omitted when empty). */
  component: string;
  /** Dynamo endpoint (label `dynamo_endpoint`; omitted when empty). */
  endpoint: string;
  /** The worker's lease id (label `worker_id`, written in hex). */
  workerId: bigint;
}

/** A fixed hierarchy for tests and the conformance kit. */
export function testHierarchy(): MetricsHierarchy {
  return { namespace: "test", component: "kiln", endpoint: "generate", workerId: 0x1234abcdn };
}

/** Labels every component metric gets without asking. */
function hierarchyLabels(h: MetricsHierarchy): Record<string, string> {
  const out: Record<string, string> = {};
  if (h.namespace) out[LABELS.namespace] = h.namespace;
  if (h.component) out[LABELS.component] = h.component;
  if (h.endpoint) out[LABELS.endpoint] = h.endpoint;
  out[LABELS.workerId] = h.workerId.toString(16);
  return out;
}

/** `model` and `model_name`; `served_model_name` wins for `model_name`; empty strings omitted. */
export function modelLabels(config?: EngineConfig): Record<string, string> {
  const out: Record<string, string> = {};
  if (config?.model) out[LABELS.model] = out[LABELS.modelName] = config.model;
  if (config?.served_model_name) out[LABELS.modelName] = config.served_model_name;
  return out;
}

/**
 * The metrics handle of one engine: component gauges named `dynamo_component_<name>` with the
 * hierarchy (and model) labels injected.
 */
export class EngineMetrics {
  /** The registry holding every metric of this engine. */
  readonly registry: Registry = new Registry();
  /** Where the engine sits in Dynamo's hierarchy. */
  readonly hierarchy: MetricsHierarchy;
  /** The hierarchy labels injected into every component metric. */
  readonly injected: Readonly<Record<string, string>>;
  /** Model identity labels (`model`, `model_name`), possibly empty. */
  readonly model: Readonly<Record<string, string>>;
  /** The framework's cleanup, drain and model-load time gauges. */
  readonly lifecycle: LifecycleGauges;
  readonly #components = new Map<number, ComponentGauges>();
  #componentFamilies:
    | { total: Gauge; usage: Gauge; hitRate: Gauge; prefixCaching: Gauge }
    | undefined;

  private constructor(hierarchy: MetricsHierarchy, config?: EngineConfig) {
    this.hierarchy = hierarchy;
    this.injected = hierarchyLabels(hierarchy);
    this.model = modelLabels(config);
    this.lifecycle = new LifecycleGauges(this);
  }

  /** A handle for an engine at `hierarchy`; `config` adds the `model` / `model_name` labels. */
  static fromHierarchy(hierarchy: MetricsHierarchy, config?: EngineConfig): EngineMetrics {
    return new EngineMetrics(hierarchy, config);
  }

  /**
   * Register a gauge `dynamo_component_<name>`. The hierarchy labels are injected; passing one
   * of them yourself is an error (as Dynamo's `create_metric` refuses a collision).
   */
  gauge(
    name: string,
    help: string,
    labels: Labels = {},
    labelNames: readonly string[] = [],
  ): Gauge {
    return this.registry.gauge(this.#options(name, help, labels, labelNames));
  }

  /** Register a counter `dynamo_component_<name>_total`, labelled as {@linkcode gauge} is. */
  counter(
    name: string,
    help: string,
    labels: Labels = {},
    labelNames: readonly string[] = [],
  ): Counter {
    return this.registry.counter(this.#options(name, help, labels, labelNames));
  }

  #options(name: string, help: string, labels: Labels, labelNames: readonly string[]) {
    const clash = [...Object.keys(labels), ...labelNames].find((k) => k in this.injected);
    if (clash !== undefined) {
      throw EngineError.invalidArgument(
        `metrics: label ${clash} of ${name} collides with an auto-injected hierarchy label`,
      );
    }
    return {
      name: COMPONENT_PREFIX + name,
      help,
      labelNames,
      constLabels: { ...this.injected, ...labels },
    };
  }

  /** Append foreign exposition text (another registry's scrape) to every render. */
  addExpfmtCallback(cb: ExpfmtCallback): void {
    this.registry.addExpfmtCallback(cb);
  }

  /** The gauges of one data-parallel rank (the same object for the same rank). */
  componentGauges(dpRank: number): ComponentGauges {
    let g = this.#components.get(dpRank);
    if (g === undefined) {
      this.#componentFamilies ??= {
        total: this.gauge(
          "total_blocks",
          "Total KV cache blocks available on the worker.",
          this.model,
          [LABELS.dpRank],
        ),
        usage: this.gauge(
          "gpu_cache_usage_percent",
          "Fraction of KV cache blocks in use (0 to 1).",
          this.model,
          [LABELS.dpRank],
        ),
        hitRate: this.gauge(
          "kv_cache_hit_rate",
          "Prefix cache hit rate: fraction of prompt blocks served from the cache.",
          this.model,
          [LABELS.dpRank],
        ),
        prefixCaching: this.gauge(
          "prefix_cache_enabled",
          "1 when the engine reuses cached prompt prefixes; 0 when it cannot for this model " +
            "(recurrent layers keep no state per block).",
          this.model,
          [LABELS.dpRank],
        ),
      };
      g = new ComponentGauges(this.#componentFamilies, { [LABELS.dpRank]: String(dpRank) });
      this.#components.set(dpRank, g);
    }
    return g;
  }

  /** Render for a scrape; the format is chosen from the `Accept` header. */
  render(
    accept?: string | null,
    extra: readonly Registry[] = [],
  ): { contentType: string; body: string } {
    const { format, contentType } = negotiate(accept);
    return { contentType, body: render([this.registry, ...extra], format) };
  }
}

/**
 * Framework-owned lifecycle gauges. They pass only the model labels: the hierarchy labels are
 * injected by `EngineMetrics.gauge`, and passing them again would collide (Dynamo's regression).
 */
export class LifecycleGauges {
  readonly #cleanup: Gauge;
  readonly #drain: Gauge;
  readonly #load: Gauge;

  /** Registers the three gauges on `metrics`. */
  constructor(metrics: EngineMetrics) {
    const labels = Object.fromEntries(
      Object.entries({ ...metrics.injected, ...metrics.model }).filter(([k]) =>
        !(k in metrics.injected)
      ),
    );
    this.#cleanup = metrics.gauge(
      "cleanup_time_seconds",
      "Time spent releasing engine resources during shutdown.",
      labels,
    );
    this.#drain = metrics.gauge(
      "drain_time_seconds",
      "Time spent draining in-flight requests before cleanup; 0 without a drain.",
      labels,
    );
    this.#load = metrics.gauge(
      "model_load_time_seconds",
      "Time spent loading the model in start().",
      labels,
    );
  }

  /** Set `dynamo_component_cleanup_time_seconds`. */
  setCleanupTime(seconds: number): void {
    this.#cleanup.set(seconds);
  }
  /** Set `dynamo_component_drain_time_seconds` (0 when there was no drain). */
  setDrainTime(seconds: number): void {
    this.#drain.set(seconds);
  }
  /** Set `dynamo_component_model_load_time_seconds`. */
  setModelLoadTime(seconds: number): void {
    this.#load.set(seconds);
  }
}

/** KV cache gauges of one `dp_rank`. */
export class ComponentGauges {
  /**
   * Made by {@linkcode EngineMetrics.componentGauges}.
   *
   * @param families The shared gauge families.
   * @param labels The rank's `dp_rank` label.
   */
  constructor(
    private readonly families: { total: Gauge; usage: Gauge; hitRate: Gauge; prefixCaching: Gauge },
    private readonly labels: Labels,
  ) {}

  /** Set `dynamo_component_total_blocks`: KV cache blocks on the worker. */
  setTotalBlocks(n: number): void {
    this.families.total.set(n, this.labels);
  }
  /** Set `dynamo_component_gpu_cache_usage_percent`: the fraction (0 to 1) of blocks in use. */
  setGpuCacheUsagePercent(fraction: number): void {
    this.families.usage.set(fraction, this.labels);
  }
  /** Set `dynamo_component_prefix_cache_enabled`: 1 when prefixes are reused, else 0. */
  setPrefixCaching(enabled: boolean): void {
    this.families.prefixCaching.set(enabled ? 1 : 0, this.labels);
  }
  /** Tri-state: `undefined` means no data yet, and writes nothing (the series stays absent). */
  setKvCacheHitRate(rate: number | undefined): void {
    if (rate !== undefined) this.families.hitRate.set(rate, this.labels);
  }
}
