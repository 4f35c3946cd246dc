/**
 * The one way a model is opened for serving, whatever the host (`serve`, `fortune`, `openModel`):
 * its text side loaded, its engine started, its metrics registered. Where the files come from and
 * what the engine runs on (in process, in a Worker) are the runtime adapter's choice.
 */
import type { LLMEngine } from "../contract/engine.ts";
import type { EngineConfig } from "../contract/types.ts";
import { engineMetrics } from "../metrics/engine_lifecycle.ts";
import type { EngineMetrics, MetricsHierarchy } from "../contract/metrics/engine_metrics.ts";
import { loadText, type ModelText } from "../text/load.ts";
import type { ModelFiles } from "../formats/source.ts";

/** A started engine with its text side and metrics, as {@linkcode startModel} gives it. */
export interface StartedModel<E extends LLMEngine> {
  /** The engine, started. */
  engine: E;
  /** What the engine reported at start. */
  config: EngineConfig;
  /** The model's tokenizer and chat template. */
  text: ModelText;
  /** The engine's metrics, with the model's labels and load time. */
  metrics: EngineMetrics;
  /** Seconds the engine took to start (the model's load time in the metrics). */
  loadSeconds: number;
}

/**
 * Open a model the one way every host does (`serve`, `fortune`, `openModel`, the demo): load its
 * text side (tokenizer, chat template) from `files`, then start `engine` as worker
 * `hierarchy.workerId` and register its metrics with the load time. Where the files come from
 * and what the engine runs on are the caller's (the runtime's adapter). A failure cleans the
 * engine up and rethrows.
 */
export async function startModel<E extends LLMEngine>(
  engine: E,
  files: ModelFiles,
  hierarchy: MetricsHierarchy,
): Promise<StartedModel<E>> {
  try {
    const text = await loadText(files);
    const t0 = performance.now();
    const config = await engine.start(hierarchy.workerId);
    const loadSeconds = (performance.now() - t0) / 1000;
    const metrics = await engineMetrics(engine, hierarchy, config, loadSeconds);
    return { engine, config, text, metrics, loadSeconds };
  } catch (e) {
    await engine.cleanup();
    throw e;
  }
}
