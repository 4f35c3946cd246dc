/**
 * The scheduler and block manager without a GPU: a simulated KV cache records which token of
 * which sequence each slot holds, and every step is checked to read exactly its sequence's
 * earlier tokens through its block table, through admission, growth, prefix hits, preemption
 * and recompute.
 */
import { equal, ok } from "node:assert/strict";
import { RequestContext } from "../../contract/engine.ts";
import { BlockManager } from "./block_manager.ts";
import { Scheduler, type TokenSlots } from "./scheduler.ts";
import { Sequence } from "./sequence.ts";
import { request } from "../../../test/support/fortune_engine.ts";
import { seeded } from "../../../test/support/kernel_harness.ts";

const CONTEXT = 256;

/** Token ids straight from the sequence (the engine reads them from its GPU store instead). */
const plainSlots: TokenSlots = {
  admit: () => {},
  evict: () => {},
  index: (seq, pos) => seq.tokens[pos]!,
};

function simulate(numBlocks: number, prompts: number[][], maxTokens: number, seed: number) {
  const blocks = new BlockManager({ numBlocks, blockSize: 4 });
  const sched = new Scheduler(blocks, { maxNumSeqs: 4, maxNumBatchedTokens: 12 }, plainSlots);
  const seqs = prompts.map((p) =>
    new Sequence(
      request(p, { stop_conditions: { max_tokens: maxTokens } }),
      new RequestContext(),
      CONTEXT,
    )
  );
  // Requests arrive three steps apart, so later ones can hit blocks committed by earlier ones.
  const arriving = [...seqs];
  /** slot -> token id written there, per step. Reused (prefix-cached) slots keep their content. */
  const cache = new Map<number, number>();
  const r = seeded(seed, 100_000);
  let draw = 0;
  let steps = 0;
  while ((arriving.length > 0 || !sched.idle) && steps < 10_000) {
    if (steps % 3 === 0 && arriving.length > 0) sched.waiting.push(arriving.shift()!);
    const step = sched.next();
    ok(step, "a step can always run while sequences wait");
    if (!step) break;
    steps++;
    const { batch } = step;
    // Write this step's K/V first (as kv_write does), then check every token's reads.
    for (let i = 0; i < batch.tokens.length; i++) cache.set(batch.slots[i]!, batch.tokens[i]!);
    let t = 0;
    for (const { seq, count } of step.parts) {
      const table = seq.blocks!.blocks;
      for (let i = 0; i < count; i++, t++) {
        const pos = batch.positions[t]!;
        equal(batch.tokens[t], seq.tokens[pos]);
        for (let p = 0; p <= pos; p++) {
          const slot = table[Math.floor(p / 4)]! * 4 + (p % 4);
          equal(cache.get(slot), seq.tokens[p], `step ${steps}: position ${p} of a sequence`);
        }
      }
    }
    for (const { seq, count } of step.parts) {
      seq.computed += count;
      blocks.commit(seq.blocks!, seq.tokens, seq.computed);
    }
    for (const seq of step.sampled) {
      seq.accept(Math.floor((r[draw++]! + 1) * 8), 0);
      if (seq.finished) sched.remove(seq);
    }
  }
  equal(blocks.used, 0);
  ok(seqs.every((s) => s.finished && s.generated === maxTokens));
  return { preemptions: sched.preemptions, hitRate: blocks.hitRate ?? 0 };
}

Deno.test("scheduler: every step reads its own tokens through the block table, with preemption", () => {
  const shared = [1, 2, 3, 4, 5, 6, 7, 8, 9];
  const prompts = [shared, [...shared, 10, 11], [20, 21], [...shared, 12], [30, 31, 32, 33, 34]];
  const roomy = simulate(64, prompts, 20, 1);
  equal(roomy.preemptions, 0);
  ok(roomy.hitRate > 0, "shared prefixes hit the cache");
  for (const seed of [2, 3, 4]) {
    const tight = simulate(12, prompts, 20, seed);
    ok(tight.preemptions > 0, "a 12-block cache forces preemption");
  }
});
