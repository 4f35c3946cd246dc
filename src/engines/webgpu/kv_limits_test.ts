/**
 * A small KV cache on the fortune model (lavapipe): a request that outgrows the whole cache ends
 * with `length` at the cache's size instead of stalling the engine, requests sent meanwhile still
 * complete, a prompt that can never fit is refused naming the numbers, and preemption with
 * readmission still serves requests that fit one at a time but not together. Also how the
 * engine sizes its cache when not told.
 */
import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { RequestContext } from "../../contract/engine.ts";
import { EngineError } from "../../contract/errors.ts";
import type { LLMEngineOutput } from "../../contract/types.ts";
import { validateStream } from "../../contract/validate.ts";
import { openCheckpoint } from "../../model/checkpoint.ts";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import {
  bytes,
  collect,
  FORTUNE,
  fortuneEngine,
  request,
  withFortune,
} from "../../../test/support/fortune_engine.ts";
import { testGpu } from "../../../test/support/gpu.ts";
import { WebGpuEngine } from "./engine.ts";

/** 8 blocks of 16 tokens: a 128-token cache, an eighth of fortune's 1024-token context. */
const BLOCKS = 8, BLOCK = 16, CACHE = BLOCKS * BLOCK;

/** A prompt of exactly `n` tokens (BOS and bytes). */
const prompt = (n: number) =>
  bytes("Fortune favours the bold and the patient alike, always. ".repeat(4))
    .slice(0, n);

Deno.test("a request that outgrows the whole cache ends with length there; one sent meanwhile completes", async () => {
  await withFortune({ kvBlocks: BLOCKS }, async (e) => {
    const long = request(prompt(57), {
      eos_token_ids: [257],
      stop_conditions: { max_tokens: 200, ignore_eos: true },
    });
    equal(long.token_ids.length, 57);
    const chunks: LLMEngineOutput[] = [];
    let short: ReturnType<typeof collect> | undefined;
    for await (
      const c of validateStream(e.generate(long, new RequestContext()), { promptTokens: 57 })
    ) {
      chunks.push(c);
      // Once the long one streams, a short request joins the queue behind it.
      short ??= collect(e, request(bytes("Luck"), { stop_conditions: { max_tokens: 8 } }));
    }
    const last = chunks[chunks.length - 1]!;
    equal(last.finish_reason, "length");
    const streamed = chunks.flatMap((c) => c.token_ids).length;
    equal(streamed, CACHE - 57, "it stops when prompt and output fill the 128-token cache");
    deepStrictEqual(last.completion_usage, {
      prompt_tokens: 57,
      completion_tokens: CACHE - 57,
      total_tokens: CACHE,
    });
    ok(short, "the long request streamed");
    const s = await short;
    equal(s.last.finish_reason, "length");
    equal(s.ids.length, 8);
    equal(e.usedBlocks, 0, "every block is free once both have ended");
    // The engine still serves: the same long request again ends the same way.
    const again = await collect(e, long);
    equal(again.ids.length, CACHE - 57);
    equal(again.last.finish_reason, "length");
    equal(e.stats.finished, e.stats.started);
  });
});

Deno.test("a prompt the whole cache can never hold is InvalidArgument naming the numbers; the boundary fits", async () => {
  await withFortune({ kvBlocks: BLOCKS }, async (e) => {
    const refused = (re: RegExp) => (err: unknown) => {
      ok(err instanceof EngineError && err.type === "InvalidArgument", String(err));
      ok(re.test(err.message), err.message);
      return true;
    };
    await rejects(
      collect(e, request(prompt(CACHE))),
      refused(
        /token_ids: a 128-token prompt and one generated token need 9 KV blocks; the KV cache holds 128 tokens \(8 blocks of 16\)/,
      ),
    );
    await rejects(
      collect(e, request(prompt(100), { stop_conditions: { max_tokens: 50, min_tokens: 40 } })),
      refused(/min_tokens: a 100-token prompt plus min_tokens 40 is 140 tokens, 9 KV blocks/),
    );
    equal(e.stats.started, 0, "nothing was queued for either");
    // One token short of the cache: admitted, one token, then length.
    const edge = await collect(e, request(prompt(CACHE - 1), { stop_conditions: {} }));
    equal(edge.ids.length, 1);
    equal(edge.last.finish_reason, "length");
    equal(e.usedBlocks, 0);
  });
});

Deno.test("requests that fit one at a time but not together are preempted, readmitted and stream what they would alone", async () => {
  const prompts = ["You will find ", "Love is a long ", "A friend in need "].map((p) =>
    request(prompt(40).slice(0, 24).concat(bytes(p).slice(1)), {
      stop_conditions: { max_tokens: 60 },
    })
  );
  const alone: number[][] = [];
  await withFortune({}, async (roomy) => {
    for (const r of prompts) alone.push((await collect(roomy, r)).ids);
  });
  // About 100 tokens each against a 128-token cache: they cannot all stay.
  await withFortune({ kvBlocks: BLOCKS, pipelineDepth: 4 }, async (tight) => {
    const together = await Promise.all(prompts.map((r) => collect(tight, r)));
    deepStrictEqual(together.map((r) => r.ids), alone);
    ok(together.every((r) => r.last.finish_reason === "length"));
    ok(tight.steps.preemptions > 0, "the small cache forced preemption");
    equal(tight.usedBlocks, 0);
  });
});

Deno.test("unless told, the cache holds four contexts, fewer when one layer's buffer would pass the device's limit", async () => {
  const config = (await openCheckpoint(dirFiles(FORTUNE))).config;
  // fortune's cache is f16 (its weights are 16-bit): bytes per block of one layer's K or V.
  const blockBytes = BLOCK * config.numKvHeads * config.headDim * 2;
  const four = 4 * Math.ceil(config.maxPositionEmbeddings / BLOCK);
  const gpu = await testGpu();
  const untold = (g = gpu) =>
    new WebGpuEngine({ files: dirFiles(FORTUNE), name: "fortune", gpu: g });
  const roomy = untold();
  const c = await roomy.start(0n);
  await roomy.cleanup();
  equal(c.total_kv_blocks, four);
  equal(c.runtime_data?.kv_blocks, four);
  equal(c.runtime_data?.kv_blocks_source, "context");
  equal(c.runtime_data?.kv_cache_bytes, 2 * config.numLayers * four * blockBytes);
  // A device whose buffers hold 100 blocks: the cache is 100 blocks, and says why.
  const small = { ...gpu, caps: { ...gpu.caps, maxStorageBufferBindingSize: 100 * blockBytes } };
  const limited = untold(small);
  const l = await limited.start(0n);
  await limited.cleanup();
  equal(l.total_kv_blocks, 100);
  equal(l.runtime_data?.kv_blocks_source, "limit");
  equal(l.runtime_data?.kv_buffer_limit_bytes, 100 * blockBytes);
  const told = await fortuneEngine({ kvBlocks: BLOCKS });
  equal((await told.start(0n)).runtime_data?.kv_blocks_source, "option");
  await told.cleanup();
  await rejects(
    (await fortuneEngine({ kvBlocks: 0 })).start(0n),
    (err: unknown) => err instanceof EngineError && err.type === "InvalidArgument",
  );
});
