/**
 * Metrics (stable), for an engine author and a server operator: a `Registry` of counters, gauges
 * and histograms, Dynamo's `EngineMetrics`, and `render`/`negotiate` for the Prometheus text and
 * OpenMetrics formats a scrape asks for.
 * @module
 */
export {
  ComponentGauges,
  CONTENT_TYPES,
  Counter,
  EngineMetrics,
  type ExpfmtCallback,
  type Format,
  Gauge,
  Histogram,
  type HistogramOptions,
  type Labels,
  LifecycleGauges,
  MetricFamily,
  type MetricOptions,
  type MetricsHierarchy,
  type MetricType,
  negotiate,
  Registry,
  render,
  type Series,
} from "../metrics/mod.ts";
