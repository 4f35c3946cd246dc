/**
 * A small metrics registry: counters, gauges and histograms with label sets and const labels.
 * Names are validated when registered; rendering lives in `exposition.ts`.
 */
import { EngineError } from "../contract/errors.ts";

export type MetricType = "counter" | "gauge" | "histogram";
export type Labels = Readonly<Record<string, string>>;

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export interface MetricOptions {
  name: string;
  help: string;
  labelNames?: readonly string[];
  constLabels?: Labels;
}

export interface HistogramOptions extends MetricOptions {
  buckets: readonly number[];
}

/** One labelled series' state. */
export interface Series {
  labels: Labels;
  value: number;
  /** Histogram only: per-bucket (non-cumulative) counts, sum and count. */
  bucketCounts?: number[];
  sum?: number;
  count?: number;
}

function invalid(message: string): EngineError {
  return EngineError.invalidArgument(`metrics: ${message}`);
}

export function checkLabelName(name: string): void {
  if (!LABEL_NAME.test(name) || name.startsWith("__")) {
    throw invalid(`invalid label name ${JSON.stringify(name)}`);
  }
}

export class MetricFamily {
  /** The family's series, keyed by the JSON array of their label values. */
  readonly series: Map<string, Series> = new Map();

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

export class Counter {
  constructor(readonly family: MetricFamily) {}
  inc(amount = 1, labels: Labels = {}): void {
    if (!(amount >= 0)) throw invalid(`${this.family.name}: counters only go up (got ${amount})`);
    this.family.child(labels).value += amount;
  }
  get(labels: Labels = {}): number {
    return this.family.child(labels).value;
  }
}

export class Gauge {
  constructor(readonly family: MetricFamily) {}
  set(value: number, labels: Labels = {}): void {
    this.family.child(labels).value = value;
  }
  inc(amount = 1, labels: Labels = {}): void {
    this.family.child(labels).value += amount;
  }
  dec(amount = 1, labels: Labels = {}): void {
    this.family.child(labels).value -= amount;
  }
  get(labels: Labels = {}): number {
    return this.family.child(labels).value;
  }
}

export class Histogram {
  constructor(readonly family: MetricFamily) {}
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

export class Registry {
  /** The registered families, keyed by family name (a counter's without `_total`). */
  readonly families: Map<string, MetricFamily> = new Map();
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

  counter(opts: MetricOptions): Counter {
    return new Counter(this.#register("counter", opts));
  }

  gauge(opts: MetricOptions): Gauge {
    return new Gauge(this.#register("gauge", opts));
  }

  histogram(opts: HistogramOptions): Histogram {
    const buckets = [...opts.buckets].filter((b) => b !== Infinity);
    if (buckets.some((b, i) => !Number.isFinite(b) || (i > 0 && b <= buckets[i - 1]!))) {
      throw invalid(`${opts.name}: buckets must be finite and strictly increasing`);
    }
    return new Histogram(this.#register("histogram", opts, buckets));
  }

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
