/**
 * A small metrics registry: counters, gauges and histograms with label sets and const labels.
 * Names are validated when registered; rendering lives in `exposition.ts`.
 */
import { EngineError } from "../errors.ts";

/** The three metric kinds Kiln renders. */
export type MetricType = "counter" | "gauge" | "histogram";
/** Label name to value. */
export type Labels = Readonly<Record<string, string>>;

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** How a metric is registered. */
export interface MetricOptions {
  /**
   * Metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`); a counter's trailing `_total` is dropped and re-added
   * when rendered.
   */
  name: string;
  /** The `# HELP` text. */
  help: string;
  /** Names of the labels each observation must give. */
  labelNames?: readonly string[];
  /** Labels with fixed values added to every series. */
  constLabels?: Labels;
}

/** How a histogram is registered. */
export interface HistogramOptions extends MetricOptions {
  /**
   * Upper bounds of the buckets, finite and strictly increasing (`+Inf` is implied and dropped if
   * given).
   */
  buckets: readonly number[];
}

/** One labelled series' state. */
export interface Series {
  /** Every label of the series, const labels included. */
  labels: Labels;
  /** The counter's or gauge's value (unused for histograms). */
  value: number;
  /** Histogram only: per-bucket (non-cumulative) counts, sum and count. */
  bucketCounts?: number[];
  /** Histogram only: sum of the observed values. */
  sum?: number;
  /** Histogram only: number of observations. */
  count?: number;
}

function invalid(message: string): EngineError {
  return EngineError.invalidArgument(`metrics: ${message}`);
}

/** Throws `InvalidArgument` unless `name` is a valid label name (not starting with `__`). */
export function checkLabelName(name: string): void {
  if (!LABEL_NAME.test(name) || name.startsWith("__")) {
    throw invalid(`invalid label name ${JSON.stringify(name)}`);
  }
}

/** One metric: its name, type, help, label names and series. */
export class MetricFamily {
  /** The family's series, keyed by the JSON array of their label values. */
  readonly series: Map<string, Series> = new Map();

  /**
   * Made by {@linkcode Registry}, which validates the arguments.
   *
   * @param type Counter, gauge or histogram.
   * @param name Metric name (a counter's without `_total`).
   * @param help The `# HELP` text.
   * @param labelNames Labels each observation gives.
   * @param constLabels Labels with fixed values.
   * @param buckets Histogram bucket upper bounds, without `+Inf`.
   */
  constructor(
    readonly type: MetricType,
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    readonly constLabels: Labels,
    readonly buckets: readonly number[] = [],
  ) {}

  /** The series for `labels` (exactly the family's label names), created on first use. */
  child(labels: Labels = {}): Series {
    const keys = Object.keys(labels);
    if (keys.length !== this.labelNames.length || !this.labelNames.every((n) => n in labels)) {
      throw invalid(
        `${this.name}: expected labels [${this.labelNames.join(", ")}], got [${keys.join(", ")}]`,
      );
    }
    const values = this.labelNames.map((n) => String(labels[n]));
    const key = JSON.stringify(values);
    let s = this.series.get(key);
    if (s === undefined) {
      const all: Record<string, string> = { ...this.constLabels };
      this.labelNames.forEach((n, i) => (all[n] = values[i]!));
      s = { labels: all, value: 0 };
      if (this.type === "histogram") {
        s.bucketCounts = new Array(this.buckets.length).fill(0);
        s.sum = 0;
        s.count = 0;
      }
      this.series.set(key, s);
    }
    return s;
  }
}

/** A monotonically increasing count. */
export class Counter {
  /** A counter writing to `family`; made by {@linkcode Registry.counter}. */
  constructor(readonly family: MetricFamily) {}
  /** Add `amount` (>= 0, else `InvalidArgument`) to the series of `labels`. */
  inc(amount = 1, labels: Labels = {}): void {
    if (!(amount >= 0)) throw invalid(`${this.family.name}: counters only go up (got ${amount})`);
    this.family.child(labels).value += amount;
  }
  /** The current value of the series of `labels`. */
  get(labels: Labels = {}): number {
    return this.family.child(labels).value;
  }
}

/** A value that goes up and down. */
export class Gauge {
  /** A gauge writing to `family`; made by {@linkcode Registry.gauge}. */
  constructor(readonly family: MetricFamily) {}
  /** Set the series of `labels` to `value`. */
  set(value: number, labels: Labels = {}): void {
    this.family.child(labels).value = value;
  }
  /** Add `amount` to the series of `labels`. */
  inc(amount = 1, labels: Labels = {}): void {
    this.family.child(labels).value += amount;
  }
  /** Subtract `amount` from the series of `labels`. */
  dec(amount = 1, labels: Labels = {}): void {
    this.family.child(labels).value -= amount;
  }
  /** The current value of the series of `labels`. */
  get(labels: Labels = {}): number {
    return this.family.child(labels).value;
  }
}

/** Observations counted into buckets, with their sum and count. */
export class Histogram {
  /** A histogram writing to `family`; made by {@linkcode Registry.histogram}. */
  constructor(readonly family: MetricFamily) {}
  /** Count `value` into the first bucket whose bound is >= `value` (none: only `+Inf`). */
  observe(value: number, labels: Labels = {}): void {
    const s = this.family.child(labels);
    const i = this.family.buckets.findIndex((b) => value <= b);
    if (i >= 0) s.bucketCounts![i]!++;
    s.sum! += value;
    s.count!++;
  }
}

/** Foreign exposition text appended to a scrape (a callback per source). */
export type ExpfmtCallback = () => string;

/** The metrics of one scrape target; render it with `render` from `exposition.ts`. */
export class Registry {
  /** The registered families, keyed by family name (a counter's without `_total`). */
  readonly families: Map<string, MetricFamily> = new Map();
  /** Callbacks whose text is appended to each scrape. */
  readonly callbacks: ExpfmtCallback[] = [];

  #register(
    type: MetricType,
    opts: MetricOptions,
    buckets: readonly number[] = [],
  ): MetricFamily {
    let name = opts.name;
    if (!METRIC_NAME.test(name)) throw invalid(`invalid metric name ${JSON.stringify(name)}`);
    if (type === "counter" && name.endsWith("_total")) name = name.slice(0, -"_total".length);
    const labelNames = opts.labelNames ?? [];
    const constLabels = opts.constLabels ?? {};
    const all = [...labelNames, ...Object.keys(constLabels)];
    all.forEach(checkLabelName);
    if (new Set(all).size !== all.length) {
      throw invalid(`${name}: duplicate label names [${all.join(", ")}]`);
    }
    if (type === "histogram" && all.includes("le")) {
      throw invalid(`${name}: "le" is reserved on histograms`);
    }
    if (typeof opts.help !== "string") throw invalid(`${name}: help must be a string`);
    const clash = [...this.families.values()].find((f) =>
      f.name === name || familyNames(f).some((n) => familyNames({ type, name }).includes(n))
    );
    if (clash !== undefined) throw invalid(`${name}: already registered as a ${clash.type}`);
    const family = new MetricFamily(type, name, opts.help, labelNames, constLabels, buckets);
    this.families.set(name, family);
    return family;
  }

  /**
   * Register a counter. Throws `InvalidArgument` on a bad or already registered name, or bad
   * labels.
   */
  counter(opts: MetricOptions): Counter {
    return new Counter(this.#register("counter", opts));
  }

  /**
   * Register a gauge. Throws `InvalidArgument` on a bad or already registered name, or bad labels.
   */
  gauge(opts: MetricOptions): Gauge {
    return new Gauge(this.#register("gauge", opts));
  }

  /**
   * Register a histogram. Throws `InvalidArgument` on a bad name, labels (`le` is reserved) or
   * buckets.
   */
  histogram(opts: HistogramOptions): Histogram {
    const buckets = [...opts.buckets].filter((b) => b !== Infinity);
    if (buckets.some((b, i) => !Number.isFinite(b) || (i > 0 && b <= buckets[i - 1]!))) {
      throw invalid(`${opts.name}: buckets must be finite and strictly increasing`);
    }
    return new Histogram(this.#register("histogram", opts, buckets));
  }

  /** Append `cb`'s exposition text to every scrape. */
  addExpfmtCallback(cb: ExpfmtCallback): void {
    this.callbacks.push(cb);
  }
}

/** The sample names a family writes, to catch collisions such as `x_count` vs histogram `x`. */
function familyNames(f: { type: MetricType; name: string }): string[] {
  if (f.type === "counter") return [f.name, `${f.name}_total`];
  if (f.type === "histogram") {
    return [f.name, `${f.name}_bucket`, `${f.name}_sum`, `${f.name}_count`];
  }
  return [f.name];
}
