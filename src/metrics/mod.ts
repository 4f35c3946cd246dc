/**
 * Metrics: a registry rendering Prometheus text and OpenMetrics, Dynamo's `EngineMetrics`,
 * and frontend-style request metrics.
 * @module
 */
export * from "../contract/metrics/registry.ts";
export {
  CONTENT_TYPES,
  escapeLabelValue,
  type Format,
  negotiate,
  render,
} from "../contract/metrics/exposition.ts";
export * from "../contract/metrics/engine_metrics.ts";
export * from "./request_metrics.ts";
export { engineMetrics, shutDown } from "./engine_lifecycle.ts";
export { type EngineLoad, type LoadReport, RouterGauges, routerGauges } from "./router_gauges.ts";
