/**
 * `WebGpuEngine`'s core: the pipelined step loop, apart from the `LLMEngine` face (`engine.ts`)
 * as vLLM's `EngineCore.step` stands apart from its async client. One `step()` prunes the
 * sequences that ended, settles the steps whose tokens are read back, asks the scheduler for the
 * next step and submits it while the pipeline has room (its depth adapted to the measured step
 * time, `pipeline_depth.ts`), else settles the oldest step in flight, else waits for a change.
 * The GPU work of a step (encode, submit, read back, hand out tokens) is `engine_steps.ts`'s.
 *
 * @module
 */
import { EngineError } from "../../contract/errors.ts";
import type { Gpu } from "../../gpu/device.ts";
import type { Sequence } from "../sequence.ts";
import { settleStep, type StepParts, submitStep } from "./engine_steps.ts";
import { PipelineDepth } from "./pipeline_depth.ts";
import type { InFlight } from "./step_counts.ts";

/**
 * What the core runs on: a started engine's parts and its counters, and `pipelineDepth`
 * (`WebGpuEngineOptions.pipelineDepth`: fixed, or adapted to the step time when undefined).
 */
export type CoreParts = Omit<StepParts, "pipe" | "wake" | "depth"> & {
  pipelineDepth: number | undefined;
};

/** What the core asks of the face. */
export interface CoreHooks {
  /** True while the engine runs or drains (the loop stops otherwise). */
  active(): boolean;
  /** Report the gauges (after a step, or once pruned sequences let their blocks go). */
  report(): void;
  /** Fail every live request with `error` (the loop itself failed). */
  fail(error: EngineError): void;
}

/** The step loop of one started engine. */
export class EngineCore {
  readonly #parts: StepParts;
  readonly #hooks: CoreHooks;
  /** The steps submitted and not yet settled, oldest first. */
  readonly #pipe: InFlight[] = [];
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;

  /** A core over `parts`; its loop starts with the first sequence admitted. */
  constructor({ pipelineDepth, ...parts }: CoreParts, hooks: CoreHooks) {
    const depth = new PipelineDepth(pipelineDepth);
    this.#parts = { ...parts, depth, pipe: this.#pipe, wake: () => this.wake() };
    this.#hooks = hooks;
  }

  /** The GPU time of a pipelined step (ms), once measured (`PipelineDepth.gapMs`). */
  get gapMs(): number | undefined {
    return this.#parts.depth.gapMs;
  }

  /** The loop now running (undefined when idle). */
  get loop(): Promise<void> | undefined {
    return this.#loop;
  }

  /** Wake the loop when it waits for a change. */
  wake(): void {
    this.#wake?.();
  }

  /**
   * Queue `seq` and start the loop if it is idle. A cancelled sequence ends its stream at once,
   * not when the step in flight is read back (a slow device may take seconds per step); the loop
   * frees its blocks at its next turn, and tokens still in flight for it are dropped.
   */
  admit(seq: Sequence): void {
    this.#parts.scheduler.waiting.push(seq);
    seq.signal.addEventListener("abort", () => {
      seq.cancel();
      this.wake();
    }, { once: true });
    this.wake();
    this.#loop ??= this.#run();
  }

  /**
   * One turn of the loop: prune → settle what is read back → schedule → submit (or settle the
   * oldest step, or wait). False when there is nothing left to do: the loop is let go at once
   * (synchronously), so a request arriving now starts a new one.
   */
  async step(): Promise<boolean> {
    const { scheduler: sched, depth, steps } = this.#parts;
    this.#prune();
    while (this.#pipe[0]?.resolvedAt !== undefined) {
      await settleStep(this.#parts, this.#pipe.shift()!);
    }
    if (sched.idle && this.#pipe.length === 0) {
      this.#loop = undefined;
      // The settles above may have ended the last requests: the gauges show the idle state.
      this.#hooks.report();
      return false;
    }
    sched.maxAhead = depth.depth;
    const next = this.#pipe.length < sched.maxAhead ? sched.next() : undefined;
    if (next !== undefined) {
      await submitStep(this.#parts, next);
    } else if (this.#pipe.length > 0) {
      await settleStep(this.#parts, this.#pipe.shift()!);
    } else {
      // Nothing fits (every block held by sequences waiting to grow): wait for a change.
      await new Promise<void>((r) => (this.#wake = r));
      this.#wake = undefined;
    }
    steps.preemptions = sched.preemptions;
    steps.droppedBlocks = sched.droppedBlocks;
    this.#hooks.report();
    return true;
  }

  /** Drop the sequences that ended or were aborted, freeing their blocks. */
  #prune(): void {
    const sched = this.#parts.scheduler;
    let freed = false;
    for (const seq of [...sched.running, ...sched.waiting]) {
      if (seq.finished || seq.signal.aborted) {
        seq.cancel();
        sched.remove(seq);
        freed = true;
      }
    }
    if (freed) this.#hooks.report(); // at once, not after the steps still in flight are read back
  }

  async #run(): Promise<void> {
    let idle = false;
    try {
      while (this.#hooks.active()) {
        if (!(await this.step())) {
          idle = true;
          return;
        }
      }
    } catch (e) {
      this.#hooks.fail(EngineError.from(e));
    } finally {
      if (!idle) {
        this.#loop = undefined;
        // What is still in flight belongs to failed or cancelled requests.
        await Promise.allSettled(this.#pipe.splice(0).map((p) => p.results));
      }
    }
  }

  /** Take every sequence out of the scheduler (their requests failed). */
  removeAll(): void {
    const sched = this.#parts.scheduler;
    for (const seq of [...sched.running, ...sched.waiting]) sched.remove(seq);
  }

  /** Destroy the step's GPU resources (read-back, sampler, token store, forward pass). */
  destroy(): void {
    const p = this.#parts;
    p.readback.destroy();
    p.sampler.destroy();
    p.tokens.destroy();
    p.forward.destroy();
  }
}

/**
 * Fail every live request (`fail`) when `gpu`'s device is lost, or reports a validation or
 * out-of-memory error: the results can no longer be trusted, so they fail loudly instead of
 * streaming garbage. Returns what stops hearing the errors (the loss cannot be unheard).
 */
export function watchDevice(gpu: Gpu, fail: (error: EngineError) => void): () => void {
  gpu.lost.then(fail);
  const onError: Parameters<GPUDevice["addEventListener"]>[1] = (ev): void => {
    const message = (ev as unknown as { error?: { message?: string } }).error?.message ??
      "unknown";
    fail(new EngineError("Unknown", `GPU error: ${message}`));
  };
  gpu.device.addEventListener("uncapturederror", onError);
  return () => gpu.device.removeEventListener("uncapturederror", onError);
}
