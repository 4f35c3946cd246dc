/**
 * The scheduler and block manager without a GPU: a simulated KV cache records which token of
 * which sequence each slot holds, and every step is checked to read exactly its sequence's
 * earlier tokens through its block table, through admission, growth, prefix hits, preemption
 * and recompute.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { RequestContext } from "../../contract/engine.ts";
import { EngineError } from "../../contract/errors.ts";
import { BlockManager } from "./block_manager.ts";
import { Scheduler, type TokenSlots } from "./scheduler.ts";
import { Sequence } from "../sequence.ts";
import { request } from "../../../test/support/fortune_engine.ts";
import { driveScheduler } from "../../../test/support/scheduler_sim.ts";

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
  // This step's K/V written first (as kv_write does), then every token's reads checked.
  driveScheduler(sched, blocks, seqs, seed, 10_000, ({ batch, parts }, cache, steps) => {
    let t = 0;
    for (const { seq, count } of parts) {
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
  });
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

Deno.test("scheduler: nothing waits for room that can never come; the queue behind keeps moving", async () => {
  // A 16-token cache, but sequences allowed the whole 256-token context (the engine would cap
  // them at the cache; the scheduler must not depend on it).
  const blocks = new BlockManager({ numBlocks: 4, blockSize: 4 });
  const sched = new Scheduler(blocks, { maxNumSeqs: 4, maxNumBatchedTokens: 12 }, plainSlots);
  const seq = (prompt: number[], maxTokens: number) =>
    new Sequence(
      request(prompt, { stop_conditions: { max_tokens: maxTokens } }),
      new RequestContext(),
      CONTEXT,
    );
  const grows = seq([1, 2, 3, 4, 5, 6], 30);
  const never = seq(Array.from({ length: 16 }, (_, i) => i + 1), 4);
  const behind = seq([7, 8], 3);
  sched.waiting.push(grows, never, behind);
  for (let steps = 0; !sched.idle; steps++) {
    ok(steps < 1000, "the scheduler finishes");
    const step = sched.next();
    if (step === undefined) {
      ok(sched.idle, "a step can run while sequences wait"); // the last one was ended in next()
      break;
    }
    for (const { seq, count } of step.parts) seq.computed += count;
    for (const s of step.sampled) {
      s.accept(9, 0);
      if (s.finished) sched.remove(s);
    }
  }
  equal(blocks.used, 0);
  // The growing one filled the cache alone and ended with length (never parked for good): the
  // K/V of 16 tokens fill it, and the 17th was sampled from them.
  equal(grows.outcome, "finished");
  equal(grows.tokens.length, 17);
  const chunks = [];
  for await (const c of grows.channel.drain()) chunks.push(c);
  equal(chunks[chunks.length - 1]!.finish_reason, "length");
  equal(sched.truncations, 1);
  // The one that could never fit failed, naming the numbers, without blocking the one behind.
  equal(never.outcome, "failed");
  await rejectsInvalid(never, /16-token prompt and one generated token need 5 KV blocks/);
  equal(behind.outcome, "finished");
  equal(behind.generated, 3);
});

async function rejectsInvalid(seq: Sequence, re: RegExp): Promise<void> {
  try {
    for await (const _ of seq.channel.drain()) { /* the error is what matters */ }
  } catch (e) {
    ok(e instanceof EngineError && e.type === "InvalidArgument" && re.test(e.message), String(e));
    return;
  }
  throw new Error("expected the sequence's stream to fail");
}
