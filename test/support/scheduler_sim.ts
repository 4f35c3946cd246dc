/**
 * The scheduler and block manager driven without a GPU (`scheduler_test.ts`, `kv_window_test.ts`):
 * requests arrive three steps apart (so later ones can hit blocks committed by earlier ones),
 * each step's K/V writes land in a simulated cache (slot -> token id, as kv_write stores them;
 * reused, prefix-cached slots keep their content), the test checks the step's reads against
 * it, then the step's tokens are committed and each sampled sequence accepts a seeded token.
 */
import { ok } from "node:assert/strict";
import type { BlockManager } from "../../src/engines/webgpu/block_manager.ts";
import type { Scheduler, Step } from "../../src/engines/webgpu/scheduler.ts";
import type { Sequence } from "../../src/engines/sequence.ts";
import { seeded } from "./kernel_harness.ts";

/**
 * Run `seqs` through `sched` until all have ended (or `maxSteps` steps), calling `check` after
 * each step's writes with the cache and the step's number (from 1).
 */
export function driveScheduler(
  sched: Scheduler,
  blocks: BlockManager,
  seqs: readonly Sequence[],
  seed: number,
  maxSteps: number,
  check: (step: Step, cache: ReadonlyMap<number, number>, steps: number) => void,
): void {
  const arriving = [...seqs];
  const cache = new Map<number, number>();
  const r = seeded(seed, 100_000);
  let draw = 0, steps = 0;
  while ((arriving.length > 0 || !sched.idle) && steps < maxSteps) {
    if (steps % 3 === 0 && arriving.length > 0) sched.waiting.push(arriving.shift()!);
    const step = sched.next();
    ok(step, "a step can always run while sequences wait");
    if (!step) break;
    steps++;
    const { batch } = step;
    for (let i = 0; i < batch.tokens.length; i++) cache.set(batch.slots[i]!, batch.tokens[i]!);
    check(step, cache, steps);
    for (const { seq, count } of step.parts) {
      seq.computed += count;
      blocks.commit(seq.blocks!, seq.tokens, seq.computed);
    }
    for (const seq of step.sampled) {
      seq.accept(Math.floor((r[draw++]! + 1) * 8), 0);
      if (seq.finished) sched.remove(seq);
    }
  }
}
