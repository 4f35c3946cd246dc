/**
 * The engine with a windowed model (issue 22), on lavapipe: a tiny Mistral with a window of 6
 * keys on every layer, blocks of 4. In a 6-block cache (24 tokens) a 50-token sequence runs to
 * its end, holding at most ceil((6 + 3) / 4) = 3 blocks (the gauges say so), with the greedy
 * tokens of the loop that keeps every block, and `BlockRemoved` for the released cached blocks
 * it evicts; two at once reuse each other's released blocks and each still gets its own tokens;
 * a 22-token prompt prefilled in 4-token chunks holds no more than 3 blocks either; a repeated
 * prompt still hits the prefix cache. The same model with one global layer releases nothing and
 * ends at the cache's size.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import type { KvCacheEvent } from "../../contract/kv_events.ts";
import type { EngineConfig } from "../../contract/types.ts";
import { collect, request } from "../../../test/support/fortune_engine.ts";
import { testGpu } from "../../../test/support/gpu.ts";
import {
  referenceTokens,
  WINDOW,
  windowModelFiles,
  windowPrompt,
} from "../../../test/support/window_model.ts";
import { WebGpuEngine, type WebGpuEngineOptions } from "./engine.ts";

const BS = 4, PROMPT = 10, OUT = 40;

interface Watched {
  e: WebGpuEngine;
  config: EngineConfig;
  events: KvCacheEvent[];
  /** The most blocks in use at any report. */
  maxUsed: () => number;
  hitRate: () => number | undefined;
}

async function withEngine(
  kvBlocks: number,
  fn: (w: Watched) => Promise<void>,
  layerTypes?: string[],
  options: Partial<WebGpuEngineOptions> = {},
): Promise<void> {
  const e = new WebGpuEngine({
    files: windowModelFiles(layerTypes),
    name: "tiny-mistral",
    gpu: await testGpu(),
    blockSize: BS,
    kvBlocks,
    warmUp: false,
    ...options,
  });
  const config = await e.start(0n);
  const events: KvCacheEvent[] = [];
  const [source] = await e.kvEventSources();
  if (source?.kind === "push") source.onReady({ publish: (ev) => events.push(ev) });
  let maxUsed = 0, hitRate: number | undefined;
  e.onGauges((g) => {
    maxUsed = Math.max(maxUsed, Math.round(g.usagePercent * g.totalBlocks));
    hitRate = g.hitRate;
  });
  try {
    await fn({ e, config, events, maxUsed: () => maxUsed, hitRate: () => hitRate });
  } finally {
    await e.cleanup();
  }
}

const ask = (prompt: number[], maxTokens = OUT) =>
  request(prompt, { stop_conditions: { max_tokens: maxTokens, ignore_eos: true } });

Deno.test("a windowed model runs past its KV cache holding a window's blocks, with the same tokens", async () => {
  const a = windowPrompt(3, PROMPT), b = windowPrompt(11, PROMPT);
  const refA = await referenceTokens(a, OUT), refB = await referenceTokens(b, OUT);
  await withEngine(6, async ({ e, config, maxUsed }) => {
    equal(config.runtime_data?.kv_window, WINDOW, "runtime_data reports the window");
    ok(PROMPT + OUT > 6 * BS, "the sequence is longer than the cache");
    const alone = await collect(e, ask(a));
    deepStrictEqual(alone.ids, refA, "the tokens of the loop that keeps every block");
    equal(alone.last.finish_reason, "length");
    ok(maxUsed() <= 3, `at most 3 blocks held, saw ${maxUsed()}`);
    ok(maxUsed() > 0);
    ok(e.steps.droppedBlocks >= 10, `${e.steps.droppedBlocks} blocks dropped`);
    // Two at once: 100 positions through a 6-block cache, each reusing what the other released.
    const [ra, rb] = await Promise.all([collect(e, ask(a)), collect(e, ask(b))]);
    deepStrictEqual(ra.ids, refA, "the first, beside the second");
    deepStrictEqual(rb.ids, refB, "the second, beside the first");
    equal(e.usedBlocks, 0, "every block is back");
    equal(e.stats.finished, 3);
  });
});

Deno.test("released cached blocks are evicted with BlockRemoved as the cache fills", async () => {
  // One step in flight: each block's tokens are known (and the block stored) before the window
  // leaves it. Deeper pipelines may release a block of sampled tokens first; it is then never
  // stored, so the blocks evicted here would vary with the measured step time.
  await withEngine(
    6,
    async ({ e, events }) => {
      await collect(e, ask(windowPrompt(3, PROMPT)));
      const stored = events.flatMap((ev) => ev.type === "BlockStored" ? ev.block_hashes : []);
      const removed = events.flatMap((ev) => ev.type === "BlockRemoved" ? ev.block_hashes : []);
      equal(stored.length, 12, "every full block of the 49 computed positions");
      // 13 blocks passed through a 6-block cache: at least 7 stored ones were evicted.
      ok(removed.length >= 7, `${removed.length} removed`);
      ok(removed.every((h) => stored.includes(h)), "each BlockRemoved names a stored block");
      equal(new Set(removed).size, removed.length, "none removed twice");
    },
    undefined,
    { pipelineDepth: 1 },
  );
});

Deno.test("a windowed model's repeated prompt hits the prefix cache and gives the same tokens", async () => {
  const a = windowPrompt(5, PROMPT);
  await withEngine(32, async ({ e, hitRate }) => {
    const first = await collect(e, ask(a, 20));
    equal(hitRate(), 0, "the first run looked its two full blocks up and missed");
    ok(e.steps.droppedBlocks > 0);
    const again = await collect(e, ask(a, 20));
    equal(hitRate(), 2 / 4, "the second found both cached, though the first had dropped them");
    deepStrictEqual(again.ids, first.ids);
  });
});

Deno.test("a long prompt prefilled in chunks releases blocks between them", async () => {
  const prompt = windowPrompt(7, 22), ref = await referenceTokens(prompt, 20);
  await withEngine(
    6,
    async ({ e, maxUsed }) => {
      const r = await collect(e, ask(prompt, 20));
      deepStrictEqual(r.ids, ref);
      // A 4-token chunk at s reads keys s - 5..s + 3: 9 positions, at most 3 blocks of 4, where
      // the 22-token prompt alone fills 6.
      ok(maxUsed() <= 3, `at most 3 blocks held, saw ${maxUsed()}`);
    },
    undefined,
    { maxNumSeqs: 1, maxNumBatchedTokens: 4 },
  );
});

Deno.test("the same model with one global layer releases nothing and ends at the cache", async () => {
  await withEngine(6, async ({ e, config }) => {
    equal(config.runtime_data?.kv_window, 0, "no window bounds the cache");
    const r = await collect(e, ask(windowPrompt(3, PROMPT)));
    equal(r.last.finish_reason, "length");
    equal(r.ids.length, 6 * BS - PROMPT, "prompt and output fill the 24-token cache");
    equal(e.steps.droppedBlocks, 0);
  }, ["sliding_attention", "full_attention"]);
});
