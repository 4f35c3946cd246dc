/**
 * Cross-request prefix-cache poisoning (issue 19): two different 16-token blocks whose former
 * 64-bit FNV-1a keys collided (`block_hash_test.ts` shows it) must not share KV. Before SHA-256
 * keys and checked hits, B run after A generated A's text ("and a ba" where B alone gives spaces).
 */
import { deepStrictEqual, notDeepStrictEqual, strictEqual as equal } from "node:assert/strict";
import type { BlockStored, KvCacheEvent } from "../../contract/kv_events.ts";
import type { WebGpuEngine } from "./engine.ts";
import { routerHash } from "../router_hash.ts";
import { collect, fortuneEngine, request } from "../../../test/support/fortune_engine.ts";
import { COLLIDING_A, COLLIDING_B } from "../../../test/support/colliding_blocks.ts";

/** One more token after the block: a prompt's last token is always computed, never looked up. */
const promptA = [...COLLIDING_A, 32];
const promptB = [...COLLIDING_B, 32];

interface Run {
  ids: number[];
  logprobs: number[];
}

async function run(e: WebGpuEngine, prompt: number[]): Promise<Run> {
  const r = await collect(e, request(prompt, { output_options: { logprobs: 0 } }));
  return { ids: r.ids, logprobs: r.chunks.flatMap((c) => c.log_probs ?? []) };
}

Deno.test("a block whose former FNV-1a key collided with a cached one's is not reused", async () => {
  // B on a fresh engine: the reference.
  const fresh = await fortuneEngine();
  await fresh.start(0n);
  let alone: Run;
  try {
    alone = await run(fresh, promptB);
  } finally {
    await fresh.cleanup();
  }
  const e = await fortuneEngine();
  await e.start(0n);
  const events: KvCacheEvent[] = [];
  const [source] = await e.kvEventSources();
  if (source?.kind === "push") source.onReady({ publish: (ev) => events.push(ev) });
  let hitRate: number | undefined;
  e.onGauges((g) => (hitRate = g.hitRate));
  try {
    const a = await run(e, promptA);
    // The test means something only if serving B from A's KV would change B's output.
    notDeepStrictEqual(a.ids, alone.ids, "A and B generate different text");
    equal(hitRate, 0, "A's first block was looked up and missed");
    const afterA = await run(e, promptB);
    deepStrictEqual(afterA.ids, alone.ids, "B after A generates what B alone does");
    deepStrictEqual(afterA.logprobs, alone.logprobs, "with the same logprobs");
    equal(hitRate, 0, "B's first block did not hit A's");
    // Both first blocks are cached, each published under the router's hash of its tokens.
    const firstBlocks = events.filter((ev): ev is BlockStored =>
      ev.type === "BlockStored" && ev.parent_block_hash === null
    );
    deepStrictEqual(firstBlocks.map((s) => s.token_ids), [COLLIDING_A, COLLIDING_B]);
    const hash = await routerHash();
    deepStrictEqual(firstBlocks.map((s) => s.block_hashes), [
      [hash(null, COLLIDING_A)],
      [hash(null, COLLIDING_B)],
    ]);
    // B again hits its own block and still generates the same text: the cache still works.
    deepStrictEqual((await run(e, promptB)).ids, alone.ids);
    equal(hitRate, 1 / 3);
  } finally {
    await e.cleanup();
  }
});
