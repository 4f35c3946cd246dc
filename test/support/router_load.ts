/**
 * For the router gauge tests (`src/metrics/`): fortune's WebGPU engine with room for 2
 * sequences and 32 KV blocks, started, with engine metrics under namespace `ns`; and a load of 5
 * requests at once on it once its metrics are bound.
 */
import { EngineMetrics } from "../../src/contract/metrics/engine_metrics.ts";
import type { WebGpuEngine } from "../../src/engines/webgpu/engine.ts";
import { bytes, collect, fortuneEngine, request } from "./fortune_engine.ts";

/** The started engine and its metrics (not yet bound: see {@linkcode runLoad}). */
export async function loadEngine(): Promise<{ e: WebGpuEngine; metrics: EngineMetrics }> {
  const e = await fortuneEngine({ maxNumSeqs: 2, kvBlocks: 32 });
  const config = await e.start(0n);
  const metrics = EngineMetrics.fromHierarchy(
    { namespace: "ns", component: "kiln", endpoint: "generate", workerId: 1n },
    config,
  );
  return { e, metrics };
}

/** Bind `metrics` (model `fortune`), then run requests 0 to 4 at once, each `prompt(i)`. */
export async function runLoad(
  e: WebGpuEngine,
  metrics: EngineMetrics,
  prompt: (i: number) => string,
  maxTokens: number,
): Promise<void> {
  await e.setupMetrics({
    model: "fortune",
    component: "kiln",
    model_load_time_seconds: 0,
    metrics,
  });
  await Promise.all(
    [0, 1, 2, 3, 4].map((i) =>
      collect(e, request(bytes(prompt(i)), { stop_conditions: { max_tokens: maxTokens } }))
    ),
  );
}
