/**
 * Keep a server's worker engine alive: when the worker dies (its streams have already ended with
 * `Disconnected`), the server answers 503 while a new worker loads the model, then serves again,
 * without a restart of the process. A failed start is retried after `retryMs`.
 */
import type { EngineConfig } from "../contract/types.ts";
import type { EngineMetrics } from "../contract/metrics/engine_metrics.ts";
import type { ModelText } from "../text/load.ts";
import type { WorkerEngine } from "../worker/client.ts";
import type { KilnServer } from "./app.ts";

export interface SupervisorOptions {
  server: KilnServer;
  text: ModelText;
  /** A new, unstarted engine. */
  make: () => WorkerEngine;
  /** The engine metrics for a freshly started engine (the server's are replaced with them). */
  metricsFor?: (
    engine: WorkerEngine,
    config: EngineConfig,
    loadSeconds: number,
  ) => Promise<EngineMetrics>;
  retryMs?: number;
  log?: (line: string) => void;
}

export class WorkerSupervisor {
  #stopped = false;
  #restarts = 0;

  /** Watch `engine`, already started and serving. */
  constructor(readonly options: SupervisorOptions, public engine: WorkerEngine) {
    engine.onDeath((e) => void this.#restart(e));
  }

  /** Workers brought up after a death. */
  get restarts(): number {
    return this.#restarts;
  }

  /** No more restarts (shutting down). */
  stop(): void {
    this.#stopped = true;
  }

  async #restart(error: Error): Promise<void> {
    const o = this.options;
    const log = o.log ?? (() => {});
    if (this.#stopped) return;
    o.server.unavailable(`engine worker died: ${error.message}; restarting`);
    log(`engine worker died (${error.message}): starting a new one`);
    await this.engine.cleanup();
    for (let attempt = 1; !this.#stopped; attempt++) {
      const next = o.make();
      try {
        const t = performance.now();
        const config = await next.start(1n);
        const metrics = await o.metricsFor?.(next, config, (performance.now() - t) / 1000);
        if (this.#stopped) {
          await next.cleanup();
          return;
        }
        this.engine = next;
        this.#restarts++;
        o.server.ready(config, o.text, metrics, next);
        next.onDeath((e) => void this.#restart(e));
        log(`new engine worker ready (attempt ${attempt})`);
        return;
      } catch (e) {
        await next.cleanup();
        log(`restart attempt ${attempt} failed: ${(e as Error).message}; retrying`);
        await new Promise((r) => setTimeout(r, o.retryMs ?? 5000));
      }
    }
  }
}
