/**
 * For tests: an `LLMEngine` with a scheduler a test holds in known states. At most `maxNumSeqs`
 * requests run (first come, first admitted); the rest wait. A running request sends one token at
 * once, holds `blocksPer` KV blocks, and then waits until the test calls `release`, which ends
 * the oldest running requests with EOS and admits waiting ones in their place. Its load is
 * reported to the router gauges (`RouterGauges`, or what `gauges` makes) after every change, as
 * the WebGPU engine reports after every step; `running` and `waiting` are the scheduler's own
 * queues, which a test compares with a scrape.
 */
import type {
  GenerateContext,
  LLMEngine,
  MetricsBindings,
  MetricsContext,
} from "../../src/contract/engine.ts";
import * as out from "../../src/contract/output.ts";
import type {
  EngineConfig,
  LLMEngineOutput,
  PreprocessedRequest,
} from "../../src/contract/types.ts";
import type { EngineMetrics } from "../../src/contract/metrics/engine_metrics.ts";
import { type RouterGauges, routerGauges } from "../../src/metrics/router_gauges.ts";

/** One request in the held scheduler. */
export interface HeldSeq {
  /** Resolves once the test releases the request (or it is cancelled). */
  readonly released: Promise<void>;
  /** Release it. */
  release(): void;
  /** Resolves once the scheduler admitted it. */
  readonly admitted: Promise<void>;
  admit(): void;
}

export interface HeldEngineOptions {
  /** Requests running at once. */
  maxNumSeqs: number;
  /** KV blocks in the cache. */
  totalBlocks: number;
  /** KV blocks each running request holds. */
  blocksPer: number;
  /** The gauges to report to (default: `routerGauges(metrics)`; a mutant in tests). */
  gauges?: (metrics: EngineMetrics) => RouterGauges;
}

function seq(): HeldSeq {
  let release!: () => void, admit!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const admitted = new Promise<void>((r) => (admit = r));
  return { released, release, admitted, admit };
}

export class HeldEngine implements LLMEngine {
  /** The scheduler's running requests, oldest first. */
  readonly running: HeldSeq[] = [];
  /** The scheduler's waiting requests, in arrival order. */
  readonly waiting: HeldSeq[] = [];
  #gauges: RouterGauges | undefined;
  #changed: (() => void)[] = [];

  constructor(readonly options: HeldEngineOptions) {}

  start(_workerId: bigint): Promise<EngineConfig> {
    return Promise.resolve({ model: "fortune", context_length: 4096 });
  }

  setupMetrics(ctx: MetricsContext): Promise<MetricsBindings> {
    this.#gauges = (this.options.gauges ?? routerGauges)(ctx.metrics);
    this.#report();
    return Promise.resolve({ dp_ranks: [0] });
  }

  /** KV blocks the running requests hold. */
  get activeBlocks(): number {
    return this.running.length * this.options.blocksPer;
  }

  async *generate(
    _request: PreprocessedRequest,
    ctx: GenerateContext,
  ): AsyncGenerator<LLMEngineOutput> {
    const s = seq();
    ctx.signal.addEventListener("abort", () => s.release(), { once: true });
    this.waiting.push(s);
    this.#schedule();
    try {
      await s.admitted;
      ctx.notifyFirstToken();
      yield out.token(65);
      await s.released;
      yield ctx.signal.aborted ? out.cancelled() : out.eos();
    } finally {
      this.#remove(s);
    }
  }

  /** End the `n` oldest running requests (each then sends EOS and leaves the scheduler). */
  release(n: number): void {
    for (const s of this.running.slice(0, n)) s.release();
  }

  /** Resolves once the scheduler holds `running` and `waiting` requests. */
  async until(running: number, waiting: number): Promise<void> {
    while (this.running.length !== running || this.waiting.length !== waiting) {
      await new Promise<void>((r) => this.#changed.push(r));
    }
  }

  cleanup(): Promise<void> {
    for (const s of [...this.running, ...this.waiting]) s.release();
    return Promise.resolve();
  }

  #remove(s: HeldSeq): void {
    const r = this.running.indexOf(s);
    if (r >= 0) this.running.splice(r, 1);
    const w = this.waiting.indexOf(s);
    if (w >= 0) this.waiting.splice(w, 1);
    this.#schedule();
  }

  #schedule(): void {
    while (this.waiting.length > 0 && this.running.length < this.options.maxNumSeqs) {
      const s = this.waiting.shift()!;
      this.running.push(s);
      s.admit();
    }
    this.#report();
  }

  #report(): void {
    const total = this.options.totalBlocks;
    this.#gauges?.report({
      totalBlocks: total,
      usagePercent: this.activeBlocks / total,
      hitRate: undefined,
      load: {
        running: this.running.length,
        waiting: this.waiting.length,
        activeBlocks: this.activeBlocks,
      },
    });
    for (const r of this.#changed.splice(0)) r();
  }
}
