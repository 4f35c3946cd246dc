/**
 * The WebGPU engine's Dynamo 1.5 members on the fortune model (Deno, lavapipe): `llm` in its
 * config, the BOS health-check probe, quiescence, and the `clear_kv_blocks` control, which
 * evicts the prefix cache's idle blocks (published as `BlockRemoved`) and keeps those a running
 * request holds.
 */
import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { RequestContext } from "../../contract/engine.ts";
import { EngineError } from "../../contract/errors.ts";
import type { KvCacheEvent } from "../../contract/kv_events.ts";
import { bytes, collect, fortuneEngine, request } from "../../../test/support/fortune_engine.ts";

const invalid = (text: string) => (e: unknown) =>
  e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes(text);

Deno.test("WebGpuEngine: llm, probe, quiescence and clear_kv_blocks", async () => {
  const e = await fortuneEngine({ kvBlocks: 32 });
  equal(await e.healthCheckPayload(), null, "no probe before start()");
  await rejects(
    e.engineControl("clear_kv_blocks", {}),
    (err: unknown) => err instanceof EngineError && err.type === "EngineShutdown",
  );
  const config = await e.start(0n);
  const events: KvCacheEvent[] = [];
  const [source] = await e.kvEventSources();
  if (source?.kind === "push") source.onReady({ publish: (ev) => events.push(ev) });
  try {
    deepStrictEqual(config.llm, {
      context_length: config.context_length,
      kv_cache_block_size: 16,
      total_kv_blocks: 32,
      max_num_seqs: config.max_num_seqs,
      max_num_batched_tokens: config.max_num_batched_tokens,
      data_parallel_size: 1,
      data_parallel_start_rank: 0,
    });

    const probe = (await e.healthCheckPayload())!;
    deepStrictEqual([probe.token_ids, probe.is_probe], [[256], true], "fortune's BOS");
    equal((await collect(e, probe)).ids.length, 1);

    // `a`'s full blocks stay cached, idle, once it ends; `b` shares none of them.
    const a = bytes("The fortune teller said that the stars would be kind".repeat(2));
    const b = bytes("Once upon a time, in a land far away, a small cat".repeat(2));
    await collect(e, request(a));
    const idle = e.cachedBlockHashes().map(String).sort();
    ok(idle.length >= 6, `${idle.length} idle blocks`);
    deepStrictEqual(await e.supportedControls(), ["clear_kv_blocks"]);

    // `b` holds its blocks while the control runs: they stay cached.
    const ctx = new RequestContext();
    const it = e.generate(request(b, { stop_conditions: { max_tokens: 200 } }), ctx)
      [Symbol.asyncIterator]();
    await it.next();
    equal(await e.isQuiescent(), false);
    events.length = 0;
    const answer = await e.engineControl("clear_kv_blocks", {});
    deepStrictEqual(answer, { status: "success", cleared_blocks: idle.length });
    const removed = events.filter((ev) => ev.type === "BlockRemoved");
    deepStrictEqual(removed.map((ev) => ev.block_hashes.map(String).sort()), [idle]);
    const left = e.cachedBlockHashes().map(String);
    ok(left.length >= 6, "b's prompt blocks are still cached");
    ok(left.every((h) => !idle.includes(h)), "no idle block is left");
    ctx.stop();
    while (!(await it.next()).done);
    equal(await e.isQuiescent(), true);
    // A prompt whose blocks were evicted is served again, from a cold cache, unchanged.
    deepStrictEqual((await collect(e, request(a))).ids, (await collect(e, request(a))).ids);

    await rejects(e.engineControl("sleep", {}), invalid('"sleep" is not offered'));
    await rejects(
      e.engineControl("clear_kv_blocks", [] as unknown as Record<string, unknown>),
      invalid("the body must be a JSON object"),
    );
  } finally {
    await e.cleanup();
  }
  equal(await e.healthCheckPayload(), null, "no probe once stopped");
});
