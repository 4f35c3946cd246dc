import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import type { BlockStored, KvCacheEvent } from "../../contract/kv_events.ts";
import { blockKey, publishedHash } from "../block_hash.ts";
import { BlockManager } from "./block_manager.ts";
import {
  COLLIDING_A,
  COLLIDING_B,
  formerBlockKey,
} from "../../../test/support/colliding_blocks.ts";

const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i);

Deno.test("allocation, growth and release; nothing used afterwards", () => {
  const m = new BlockManager({ numBlocks: 8, blockSize: 4 });
  const a = m.allocate(range(0, 10))!;
  equal(a.cachedTokens, 0);
  equal(a.seq.blocks.length, 3);
  equal(m.used, 3);
  ok(m.ensure(a.seq, 13));
  equal(a.seq.blocks.length, 4);
  equal(new Set(a.seq.blocks).size, 4, "distinct blocks");
  m.release(a.seq);
  equal(m.used, 0);
  equal(m.available, 8);
});

Deno.test("a second request with the same prefix reuses committed full blocks", () => {
  const events: KvCacheEvent[] = [];
  const m = new BlockManager({ numBlocks: 16, blockSize: 4, onEvent: (e) => events.push(e) });
  const prompt = range(100, 111); // 11 tokens: two full blocks
  const a = m.allocate(prompt)!;
  m.commit(a.seq, prompt, prompt.length);
  const stored = events.filter((e) => e.type === "BlockStored");
  equal(stored.length, 2);
  const [s0, s1] = stored as Extract<KvCacheEvent, { type: "BlockStored" }>[];
  equal(s0!.parent_block_hash, null);
  equal(s1!.parent_block_hash, s0!.block_hashes[0]);
  deepStrictEqual(s0!.token_ids, [100, 101, 102, 103]);
  // Published: the low 64 bits of the SHA-256 keys the cache uses.
  const k0 = blockKey(null, range(100, 104));
  deepStrictEqual(s0!.block_hashes, [publishedHash(k0)]);
  deepStrictEqual(s1!.block_hashes, [publishedHash(blockKey(k0, range(104, 108)))]);
  const b = m.allocate([...prompt.slice(0, 8), 7, 7])!;
  equal(b.cachedTokens, 8);
  deepStrictEqual(b.seq.blocks.slice(0, 2), a.seq.blocks.slice(0, 2));
  equal(m.hitRate, 2 / 4);
  const c = m.allocate(range(0, 11))!;
  equal(c.cachedTokens, 0, "a different prefix misses");
  for (const s of [a.seq, b.seq, c.seq]) m.release(s);
  equal(m.used, 0);
  // Released but still cached: a third request hits without anyone holding the blocks.
  const d = m.allocate(prompt)!;
  equal(d.cachedTokens, 8);
  m.release(d.seq);
});

Deno.test("a fully cached prompt still leaves its last token to compute", () => {
  const m = new BlockManager({ numBlocks: 8, blockSize: 4 });
  const prompt = range(0, 8);
  const a = m.allocate(prompt)!;
  m.commit(a.seq, prompt, 8);
  m.release(a.seq);
  const b = m.allocate(prompt)!;
  equal(b.cachedTokens, 4, "the second block is recomputed so its last token yields logits");
});

Deno.test("cached free blocks are evicted least recently used first when space runs out", () => {
  const events: KvCacheEvent[] = [];
  const m = new BlockManager({ numBlocks: 4, blockSize: 2, onEvent: (e) => events.push(e) });
  const p1 = [1, 1, 9], p2 = [2, 2, 9];
  const a = m.allocate(p1)!;
  m.commit(a.seq, p1, 3);
  m.release(a.seq);
  const b = m.allocate(p2)!;
  m.commit(b.seq, p2, 3);
  m.release(b.seq);
  equal(m.available, 4);
  const big = m.allocate(range(10, 17))!; // 4 blocks: evicts both cached blocks, oldest first
  const removed = events.filter((e) => e.type === "BlockRemoved");
  equal(removed.length, 2);
  equal(m.allocate([1, 1, 9])?.cachedTokens ?? -1, -1, "no room: nothing allocated");
  m.release(big.seq);
  equal(m.allocate(p1)!.cachedTokens, 0, "evicted prefix misses");
});

Deno.test("allocation fails cleanly when the cache is full; clear() empties everything", () => {
  const events: KvCacheEvent[] = [];
  const m = new BlockManager({ numBlocks: 3, blockSize: 4, onEvent: (e) => events.push(e) });
  const a = m.allocate(range(0, 12))!;
  equal(m.allocate([1]), undefined);
  equal(m.ensure(a.seq, 13), false);
  m.clear();
  equal(m.used, 0);
  equal(m.available, 3);
  equal(events.at(-1)?.type, "AllBlocksCleared");
});

const stored = (events: KvCacheEvent[]) =>
  events.filter((e): e is BlockStored => e.type === "BlockStored");

Deno.test("with the former colliding key, the issue's pair misses; equal tokens still hit", () => {
  const events: KvCacheEvent[] = [];
  const m = new BlockManager({
    numBlocks: 8,
    blockSize: 16,
    blockKey: formerBlockKey,
    onEvent: (e) => events.push(e),
  });
  equal(formerBlockKey(null, COLLIDING_A), formerBlockKey(null, COLLIDING_B), "the keys collide");
  const a = [...COLLIDING_A, 32], b = [...COLLIDING_B, 32];
  const first = m.allocate(a)!;
  m.commit(first.seq, a, a.length);
  m.release(first.seq);
  const second = m.allocate(b)!;
  equal(second.cachedTokens, 0, "other tokens under the same key: a miss");
  equal(m.mismatches, 1);
  m.commit(second.seq, b, b.length);
  equal(m.mismatches, 2, "and B's block does not replace or join A's");
  deepStrictEqual(stored(events).map((e) => e.token_ids), [COLLIDING_A]);
  m.release(second.seq);
  equal(m.allocate(a)!.cachedTokens, 16, "A's own tokens still hit");
  equal(m.hits, 1);
});

Deno.test("a hit also needs the same prefix before the block, whatever the key says", () => {
  // Keys that ignore the parent: block Y after W and Y after X share a key.
  const m = new BlockManager({
    numBlocks: 16,
    blockSize: 2,
    blockKey: (_parent, tokens) => blockKey(null, tokens),
  });
  const wy = [5, 5, 7, 7, 1], x = [6, 6, 1];
  for (const p of [wy, x]) {
    const s = m.allocate(p)!;
    m.commit(s.seq, p, p.length);
    m.release(s.seq);
  }
  const xy = m.allocate([6, 6, 7, 7, 1])!;
  equal(xy.cachedTokens, 2, "X hits; Y, cached after W, does not");
  equal(m.mismatches, 1);
  m.release(xy.seq);
  equal(m.allocate(wy)!.cachedTokens, 4, "W then Y hits both");
});

Deno.test("a block whose parent was evicted hits again once that parent is cached anew", () => {
  const events: KvCacheEvent[] = [];
  const m = new BlockManager({ numBlocks: 4, blockSize: 2, onEvent: (e) => events.push(e) });
  const xy = [1, 1, 2, 2, 9];
  const a = m.allocate(xy)!;
  m.commit(a.seq, xy, xy.length);
  m.release(a.seq);
  // Three blocks: the two free ones and one evicted, X (released with Y, and cached first).
  m.release(m.allocate([5, 5, 5, 5, 5])!.seq);
  const x = blockKey(null, [1, 1]);
  deepStrictEqual(events.filter((e) => e.type === "BlockRemoved"), [
    { type: "BlockRemoved", block_hashes: [publishedHash(x)] },
  ]);
  const c = m.allocate([1, 1, 8])!;
  equal(c.cachedTokens, 0, "X was evicted");
  m.commit(c.seq, [1, 1, 8], 3);
  m.release(c.seq);
  equal(m.allocate(xy)!.cachedTokens, 4, "the new X, then the Y cached after the old one");
  equal(m.mismatches, 0);
});
