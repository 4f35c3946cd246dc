/**
 * The GPU memory gauge a `WebGpuEngine` reports with its KV gauges:
 * `dynamo_component_gpu_memory_bytes{kind="weights"|"kv"|"scratch"|"staging"|"other"}`, the live
 * bytes of the device's buffers by kind (`gpu/memory_ledger.ts`), and
 * `dynamo_component_gpu_memory_peak_bytes`, the highest total seen.
 */
import { GPU_MEMORY_KINDS, memoryLedger } from "../../gpu/memory_ledger.ts";
import type { EngineMetrics } from "../../contract/metrics/engine_metrics.ts";
import type { Gauge } from "../../contract/metrics/registry.ts";

/** The two gauges of one metrics handle (registered once, however many times bound). */
const families = new WeakMap<EngineMetrics, { bytes: Gauge; peak: Gauge }>();

export class MemoryGauges {
  #bytes: Gauge | undefined;
  #peak: Gauge | undefined;

  /** Register the gauges on `metrics` (with its model labels). */
  bind(metrics: EngineMetrics): void {
    let f = families.get(metrics);
    if (f === undefined) {
      f = {
        bytes: metrics.gauge(
          "gpu_memory_bytes",
          "Bytes of the GPU buffers the engine holds, by kind (weights, kv, state, scratch, staging, " +
            "other).",
          metrics.model,
          ["kind"],
        ),
        peak: metrics.gauge(
          "gpu_memory_peak_bytes",
          "The most bytes of GPU buffers the engine's device held at once.",
          metrics.model,
        ),
      };
      families.set(metrics, f);
    }
    this.#bytes = f.bytes;
    this.#peak = f.peak;
  }

  /** Report `device`'s ledger (nothing before the gauges are bound or the device exists). */
  report(device: GPUDevice | undefined): void {
    if (!device || !this.#bytes) return;
    const s = memoryLedger(device).snapshot();
    for (const kind of GPU_MEMORY_KINDS) this.#bytes.set(s[kind], { kind });
    this.#peak?.set(s.peak);
  }
}
