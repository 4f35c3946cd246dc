/**
 * Sliding-window block release without a GPU (issue 22): `BlockManager.drop` releases a
 * sequence's leading blocks by reference count (shared and prefix-cached blocks included, with
 * `BlockRemoved` when a cached one is evicted), and the scheduler, given a window on every layer,
 * drops them as sequences advance. A simulated cache records which token each slot holds; every
 * step's tokens are checked to read exactly their own window through the step's block table
 * (as the attention kernel does), while other sequences reuse the released blocks, under a
 * cache smaller than one sequence, preemption, recompute and prefix hits.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { RequestContext } from "../../contract/engine.ts";
import type { KvCacheEvent } from "../../contract/kv_events.ts";
import { kvWindow } from "../../model/attention_knobs.ts";
import { BlockManager, DROPPED } from "./block_manager.ts";
import { Scheduler, type TokenSlots } from "./scheduler.ts";
import { Sequence } from "../sequence.ts";
import { request } from "../../../test/support/fortune_engine.ts";
import { driveScheduler } from "../../../test/support/scheduler_sim.ts";

const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i);
const held = (blocks: number[]) => blocks.filter((id) => id !== DROPPED).length;

Deno.test("kvWindow: the smallest window when every layer has one; 0 with any global layer", () => {
  equal(kvWindow({ slidingWindow: 6 }, 3), 6);
  equal(kvWindow({ slidingWindow: 6, slidingLayers: [true, true, true] }, 3), 6);
  equal(kvWindow({ slidingWindow: 6, slidingLayers: [true, false, true] }, 3), 0);
  equal(kvWindow({}, 3), 0);
});

Deno.test("drop releases leading blocks by reference count; cached ones stay cached", () => {
  const events: KvCacheEvent[] = [];
  const m = new BlockManager({ numBlocks: 6, blockSize: 4, onEvent: (e) => events.push(e) });
  const prompt = range(100, 113); // 13 tokens: three full blocks
  const a = m.allocate(prompt, 1)!;
  m.commit(a.seq, prompt, prompt.length);
  const ids = [...a.seq.blocks];
  equal(m.used, 4);
  // Computing position 13 with a window of 6 reads keys 8..13: blocks 0 and 1 are unread.
  deepStrictEqual(m.drop(a.seq, 13 + 1 - 6), [ids[0], ids[1]]);
  deepStrictEqual(a.seq.blocks, [DROPPED, DROPPED, ids[2], ids[3]]);
  equal(a.seq.dropped, 2);
  equal(m.used, 2, "usage drops");
  deepStrictEqual(m.drop(a.seq, 8), [], "dropping again releases nothing");
  // The dropped blocks stay in the prefix cache: the same prompt still hits all three.
  const b = m.allocate(prompt, 1)!;
  equal(b.cachedTokens, 12);
  deepStrictEqual(b.seq.blocks.slice(0, 3), ids.slice(0, 3));
  // Block 2 is a's too: b dropping it leaves a's reference, and only a's release frees it.
  deepStrictEqual(m.drop(b.seq, 12), [ids[0], ids[1]]);
  equal(m.used, 3, "a's blocks 2 and 3, b's last");
  m.release(a.seq);
  equal(m.used, 1);
  // Filling the cache evicts the released cached blocks, publishing BlockRemoved for each.
  const c = m.allocate(range(0, 16))!;
  equal(c.seq.blocks.length, 4);
  const removed = events.filter((e) => e.type === "BlockRemoved").length;
  equal(removed, 2, "blocks 0 and 1, the least recently used cached ones");
  m.release(b.seq);
  m.release(c.seq);
  equal(m.used, 0);
  equal(m.available, 6, "no block freed twice, none lost");
});

Deno.test("a block dropped before its tokens are known is left out of the cache, the chain goes on", () => {
  const events: KvCacheEvent[] = [];
  const m = new BlockManager({ numBlocks: 8, blockSize: 2, onEvent: (e) => events.push(e) });
  const a = m.allocate([1, 2, 3])!;
  m.ensure(a.seq, 7);
  m.drop(a.seq, 4); // blocks 0 and 1, before their tokens reached commit
  m.commit(a.seq, [1, 2, 3, 4, 5, 6, 7], 7);
  equal(a.seq.prefixes.length, 3);
  const stored = events.filter((e) => e.type === "BlockStored");
  equal(stored.length, 1, "only block 2 was still held");
  m.release(a.seq);
  equal(m.available, 8);
});

/** Token ids straight from the sequence. */
const plainSlots: TokenSlots = { admit: () => {}, evict: () => {}, index: (s, p) => s.tokens[p]! };

interface SimResult {
  preemptions: number;
  dropped: number;
  hitRate: number;
  /** The most blocks one decoding sequence held before a step. */
  maxHeld: number;
  events: KvCacheEvent[];
  seqs: Sequence[];
}

/**
 * Run `prompts` to `maxTokens` each under a window `w` with blocks of 4, checking every token's
 * reads of its window through the step's block table, as the attention kernel makes them.
 */
function simulate(
  numBlocks: number,
  w: number,
  prompts: number[][],
  maxTokens: number,
  seed: number,
): SimResult {
  const events: KvCacheEvent[] = [];
  const blocks = new BlockManager({ numBlocks, blockSize: 4, onEvent: (e) => events.push(e) });
  const sched = new Scheduler(
    blocks,
    { maxNumSeqs: 4, maxNumBatchedTokens: 12, kvWindow: w },
    plainSlots,
  );
  const limit = sched.sequenceLimit(1024);
  const seqs = prompts.map((p) =>
    new Sequence(
      request(p, { stop_conditions: { max_tokens: maxTokens } }),
      new RequestContext(),
      limit,
    )
  );
  let maxHeld = 0;
  driveScheduler(sched, blocks, seqs, seed, 20_000, ({ batch, parts }, cache, steps) => {
    for (const { seq, count } of parts) {
      if (count === 1 && seq.computed >= seq.promptLength) {
        maxHeld = Math.max(maxHeld, held(seq.blocks!.blocks));
      }
    }
    let t = 0;
    for (const { seq, count } of parts) {
      for (let i = 0; i < count; i++, t++) {
        const pos = batch.positions[t]!;
        equal(batch.tokens[t], seq.tokens[pos]);
        for (let p = Math.max(0, pos + 1 - w); p <= pos; p++) {
          const block = batch.blockTable[batch.tableOffsets[t]! + Math.floor(p / 4)]!;
          equal(cache.get(block * 4 + (p % 4)), seq.tokens[p], `step ${steps}: position ${p}`);
        }
      }
    }
  });
  equal(blocks.used, 0, "every block is back once all have ended");
  ok(seqs.every((s) => s.finished && s.generated === maxTokens), "every sequence completes");
  return {
    preemptions: sched.preemptions,
    dropped: sched.droppedBlocks,
    hitRate: blocks.hitRate ?? 0,
    maxHeld,
    events,
    seqs,
  };
}

const SHARED = range(1, 10);
const PROMPTS = [SHARED, [...SHARED, 10, 11], [20, 21], [...SHARED, 12], range(30, 35)];

Deno.test("scheduler with a window: each token reads its own window while released blocks are reused", () => {
  // 6 keys, blocks of 4: one sequence needs at most ceil((6 + 3) / 4) = 3 blocks to decode.
  const roomy = simulate(64, 6, PROMPTS, 40, 1);
  equal(roomy.preemptions, 0);
  ok(roomy.dropped > 0, "blocks were released as sequences advanced");
  ok(roomy.maxHeld <= 3, `a decoding sequence held ${roomy.maxHeld} blocks`);
  ok(roomy.hitRate > 0, "shared prefixes still hit the cache");
  // 8 blocks hold 32 tokens; each sequence reaches up to 51: it completes only by dropping.
  for (const seed of [2, 3, 4]) {
    const tight = simulate(8, 6, PROMPTS, 40, seed);
    ok(tight.maxHeld <= 3, `a decoding sequence held ${tight.maxHeld} blocks`);
    ok(tight.preemptions > 0, "five sequences in 8 blocks preempt (and recompute) some");
    const stored = new Set(
      tight.events.flatMap((e) => e.type === "BlockStored" ? e.block_hashes : []),
    );
    const removed = tight.events.flatMap((e) => e.type === "BlockRemoved" ? e.block_hashes : []);
    ok(removed.length > 0, "released cached blocks were evicted");
    ok(removed.every((h) => stored.has(h)), "each BlockRemoved names a stored block");
  }
  // A window of one key, shorter than a block: a sequence holds one or two blocks.
  ok(simulate(4, 1, PROMPTS, 30, 5).maxHeld <= 1);
});

Deno.test("scheduler without a window drops nothing and caps a sequence at the cache", () => {
  const blocks = new BlockManager({ numBlocks: 8, blockSize: 4 });
  const plain = new Scheduler(blocks, { maxNumSeqs: 4, maxNumBatchedTokens: 12 }, plainSlots);
  equal(plain.sequenceLimit(1024), 32);
  const windowed = new Scheduler(
    blocks,
    { maxNumSeqs: 4, maxNumBatchedTokens: 12, kvWindow: 6 },
    plainSlots,
  );
  equal(windowed.sequenceLimit(1024), 1024, "3 blocks per sequence fit: the context is the limit");
  const huge = new Scheduler(
    blocks,
    { maxNumSeqs: 4, maxNumBatchedTokens: 12, kvWindow: 40 },
    plainSlots,
  );
  equal(huge.sequenceLimit(1024), 32, "a window wider than the cache: the cache is the limit");
  const seq = new Sequence(
    request(range(1, 10), { stop_conditions: { max_tokens: 40 } }),
    new RequestContext(),
    plain.sequenceLimit(1024),
  );
  plain.waiting.push(seq);
  let maxHeld = 0;
  while (!plain.idle) {
    const step = plain.next()!;
    for (const { seq, count } of step.parts) seq.computed += count;
    maxHeld = Math.max(maxHeld, held(seq.blocks?.blocks ?? []));
    for (const s of step.sampled) {
      s.accept(7, 0);
      if (s.finished) plain.remove(s);
    }
  }
  equal(plain.droppedBlocks, 0);
  equal(seq.tokens.length, 32, "ended with length at the cache's 32 tokens");
  equal(maxHeld, 8);
});
