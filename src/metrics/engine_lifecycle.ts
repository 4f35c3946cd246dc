/**
 * What every host of an engine does around its life, with the times Dynamo's lifecycle gauges
 * report: register the engine's metrics once it has started, and shut it down (drain, then
 * cleanup) recording how long each took.
 */
import type { LLMEngine } from "../contract/engine.ts";
import type { EngineConfig } from "../contract/types.ts";
import { EngineMetrics, type MetricsHierarchy } from "../contract/metrics/engine_metrics.ts";

/** `EngineMetrics` with the model's labels and load time, handed to `engine.setupMetrics`. */
export async function engineMetrics(
  engine: LLMEngine,
  hierarchy: MetricsHierarchy,
  config: EngineConfig,
  modelLoadSeconds: number,
): Promise<EngineMetrics> {
  const metrics = EngineMetrics.fromHierarchy(hierarchy, config);
  metrics.lifecycle.setModelLoadTime(modelLoadSeconds);
  await engine.setupMetrics?.({
    model: config.model,
    component: hierarchy.component,
    model_load_time_seconds: modelLoadSeconds,
    metrics,
  });
  return metrics;
}

/**
 * Drain, then clean up, recording both durations on `metrics`. The drain time runs from this
 * call (a host makes it when the drain starts, at the signal) to the last request finishing:
 * `requests` first, when given (a server's own drain, resolving once its requests in flight have
 * finished or been cut), then the engine's `drain`.
 */
export async function shutDown(
  engine: LLMEngine,
  metrics: EngineMetrics,
  requests?: () => Promise<unknown>,
): Promise<void> {
  let t = performance.now();
  await requests?.();
  await engine.drain?.();
  metrics.lifecycle.setDrainTime((performance.now() - t) / 1000);
  t = performance.now();
  await engine.cleanup();
  metrics.lifecycle.setCleanupTime((performance.now() - t) / 1000);
}
