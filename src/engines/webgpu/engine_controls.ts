/**
 * What `WebGpuEngine` shows besides its streams: its engine controls (Dynamo 1.5's
 * `engineControl`: a table of handlers by name) and its gauges (KV cache, GPU memory,
 * speculation), each reading the engine through a narrow view of it.
 *
 * @module
 */
import type { ControlHandler } from "../../contract/engine_hooks.ts";
import { EngineError } from "../../contract/errors.ts";
import type { EngineMetrics } from "../../contract/metrics/engine_metrics.ts";
import { routerGauges } from "../../metrics/router_gauges.ts";
import type { SpeculationCounts } from "../speculation.ts";
import { SpeculationMetrics } from "../speculation_metrics.ts";
import type { BlockManager } from "./block_manager.ts";
import { KvGauges, type KvGaugeValues } from "./kv_gauges.ts";
import { MemoryGauges } from "./memory_gauges.ts";
import type { Scheduler } from "./scheduler.ts";

/** What the controls see of the engine, read when a control runs. */
export interface ControlledEngine {
  /** The engine's state: `new`, `starting`, `running`, `draining` or `stopped`. */
  state(): string;
  /** The KV block manager (undefined before `start()`). */
  blocks(): BlockManager | undefined;
  /** Report the gauges again (after the cache changed). */
  report(): void;
}

/**
 * The controls of `engine`. `clear_kv_blocks` (as Dynamo's vLLM worker names it): evict the
 * prefix cache's blocks no request holds, publishing `BlockRemoved`; answers
 * `{status: "success", cleared_blocks}`. Refused (`EngineShutdown`) unless the engine is running
 * or draining.
 */
export function engineControls(engine: ControlledEngine): Record<string, ControlHandler> {
  return {
    clear_kv_blocks: () => {
      const state = engine.state();
      if (state !== "running" && state !== "draining") {
        return Promise.reject(EngineError.shutdown(`clear_kv_blocks on a ${state} engine`));
      }
      const cleared = engine.blocks()!.evictIdle();
      engine.report();
      return Promise.resolve({ status: "success", cleared_blocks: cleared });
    },
  };
}

/** What the gauges see of the engine, read at each report. */
export interface GaugedEngine {
  /** The scheduler (undefined before `start()`). */
  scheduler(): Scheduler | undefined;
  /** The KV block manager (undefined before `start()`). */
  blocks(): BlockManager | undefined;
  /** The device (undefined before `start()` and after cleanup). */
  device(): GPUDevice | undefined;
  /** The engine's speculation counts. */
  speculation(): SpeculationCounts;
}

/** The engine's gauges, reported together after every step. */
export class EngineGauges {
  readonly #kv = new KvGauges();
  readonly #memory = new MemoryGauges();
  readonly #spec = new SpeculationMetrics();

  /** Gauges of `engine`, bound to nothing yet. */
  constructor(readonly engine: GaugedEngine) {}

  /** Report every gauge now. */
  report(): void {
    const e = this.engine;
    const sched = e.scheduler();
    const requests = { running: sched?.running.length ?? 0, waiting: sched?.waiting.length ?? 0 };
    this.#kv.report(e.blocks(), requests, e.speculation());
    this.#memory.report(e.device());
    this.#spec.report(e.speculation());
  }

  /** Call `cb` with the KV gauges after every step, starting now. */
  listen(cb: (values: KvGaugeValues) => void): void {
    this.#kv.listen(cb);
    this.report();
  }

  /** Report to `metrics` from now on, starting now. */
  bind(metrics: EngineMetrics): void {
    this.#kv.bind(metrics.componentGauges(0), routerGauges(metrics));
    this.#memory.bind(metrics);
    this.#spec.bind(metrics);
    this.report();
  }
}
