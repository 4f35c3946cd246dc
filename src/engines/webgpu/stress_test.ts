/**
 * 64 concurrent requests on the fortune engine (random lengths and cancellations,
 * `test/support/soak.ts`) under a cache small enough that they wait for blocks and get
 * preempted: every one ends correctly and nothing leaks.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import type { KvCacheEvent } from "../../contract/kv_events.ts";
import { fortuneEngine } from "../../../test/support/fortune_engine.ts";
import { soak } from "../../../test/support/soak.ts";

Deno.test("64 concurrent requests with random lengths and cancellations all end correctly; nothing leaks", async () => {
  // A small cache (24 blocks of 16) so requests also wait for blocks and get preempted.
  const engine = await fortuneEngine({ kvBlocks: 24, maxNumSeqs: 16, maxNumBatchedTokens: 64 });
  await engine.start(0n);
  const events: KvCacheEvent[] = [];
  const [source] = await engine.kvEventSources();
  if (source?.kind === "push") source.onReady({ publish: (e) => events.push(e) });
  const result = await soak(engine, 64, 64);
  equal(engine.stats.started, 64);
  equal(engine.stats.cancelled, result.cancelled);
  ok(events.some((e) => e.type === "BlockStored"), "prefix blocks were published");
  await engine.cleanup();
});
