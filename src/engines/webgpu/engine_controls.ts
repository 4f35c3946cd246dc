/**
 * `WebGpuEngine`'s engine controls (Dynamo 1.5's `engineControl`): a table of handlers by name,
 * each reading the engine through a narrow view of it.
 *
 * @module
 */
import type { ControlHandler } from "../../contract/engine_hooks.ts";
import { EngineError } from "../../contract/errors.ts";
import type { BlockManager } from "./block_manager.ts";

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
