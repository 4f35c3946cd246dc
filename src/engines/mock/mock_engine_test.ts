import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { RequestContext } from "../../contract/engine.ts";
import { EngineError } from "../../contract/errors.ts";
import type { KvCacheEvent } from "../../contract/kv_events.ts";
import type { LLMEngineOutput, PreprocessedRequest } from "../../contract/types.ts";
import { validateStream } from "../../contract/validate.ts";
import { EngineMetrics, testHierarchy } from "../../contract/metrics/engine_metrics.ts";
import { MockEngine } from "./mock_engine.ts";
import { mockToken, promptSeed } from "./tokens.ts";
import { checkCancellation } from "../../../test/support/cancel_checks.ts";
import { watch } from "../../../test/support/streams.ts";

const ctx = () => new RequestContext();

function request(overrides: Partial<PreprocessedRequest> = {}): PreprocessedRequest {
  return {
    model: "kiln-mock",
    token_ids: [1, 2, 3],
    stop_conditions: {},
    sampling_options: {},
    output_options: {},
    eos_token_ids: [],
    annotations: [],
    ...overrides,
  };
}

async function run(engine: MockEngine, req: PreprocessedRequest, ctx = new RequestContext()) {
  const chunks: LLMEngineOutput[] = [];
  for await (
    const c of validateStream(engine.generate(req, ctx), { promptTokens: req.token_ids.length })
  ) {
    chunks.push(c);
  }
  const last = chunks[chunks.length - 1]!;
  return { chunks, last, ids: chunks.flatMap((c) => c.token_ids) };
}

async function started(options = {}): Promise<MockEngine> {
  const e = new MockEngine(options);
  await e.start(0n);
  return e;
}

const expected = (prompt: number[], n: number, vocab = 32000) =>
  Array.from({ length: n }, (_, i) => mockToken(promptSeed(prompt), i, vocab));

Deno.test("tokens are deterministic from the prompt and honour max_tokens", async () => {
  const e = await started();
  const a = await run(e, request({ stop_conditions: { max_tokens: 5 } }));
  const b = await run(e, request({ stop_conditions: { max_tokens: 5 } }));
  deepStrictEqual(a.ids, expected([1, 2, 3], 5));
  deepStrictEqual(a.ids, b.ids);
  equal(a.last.finish_reason, "length");
  deepStrictEqual(a.last.completion_usage, {
    prompt_tokens: 3,
    completion_tokens: 5,
    total_tokens: 8,
  });
  const other = await run(e, request({ token_ids: [9, 9], stop_conditions: { max_tokens: 5 } }));
  ok(JSON.stringify(other.ids) !== JSON.stringify(a.ids));
});

Deno.test("max_tokens 0 gives one terminal length chunk with usage (prompt, 0)", async () => {
  const e = await started();
  const { chunks } = await run(e, request({ stop_conditions: { max_tokens: 0 } }));
  deepStrictEqual(chunks, [{
    token_ids: [],
    finish_reason: "length",
    completion_usage: { prompt_tokens: 3, completion_tokens: 0, total_tokens: 3 },
  }]);
});

Deno.test("stop_token_ids show the token; hidden ones do not; min_tokens defers both", async () => {
  const e = await started();
  const seq = expected([1, 2, 3], 10);
  const shown = await run(
    e,
    request({ stop_conditions: { max_tokens: 10, stop_token_ids: [seq[3]!] } }),
  );
  deepStrictEqual(shown.ids, seq.slice(0, seq.indexOf(seq[3]!) + 1));
  equal(shown.last.finish_reason, "stop");
  equal(shown.last.stop_reason, seq[3]);
  const hidden = await run(
    e,
    request({ stop_conditions: { max_tokens: 10, stop_token_ids_hidden: [seq[3]!] } }),
  );
  deepStrictEqual(hidden.ids, seq.slice(0, seq.indexOf(seq[3]!)));
  equal(hidden.last.finish_reason, "stop");
  equal(hidden.last.completion_usage?.completion_tokens, hidden.ids.length);
  const deferred = await run(
    e,
    request({ stop_conditions: { max_tokens: 10, min_tokens: 8, stop_token_ids: [seq[0]!] } }),
  );
  ok(deferred.ids.length >= 8, "no stop before min_tokens");
});

Deno.test("EOS ends with eos unless ignore_eos", async () => {
  const e = await started();
  const seq = expected([1, 2, 3], 10);
  const eos = await run(
    e,
    request({ eos_token_ids: [seq[2]!], stop_conditions: { max_tokens: 10 } }),
  );
  deepStrictEqual(eos.ids, seq.slice(0, seq.indexOf(seq[2]!)));
  equal(eos.last.finish_reason, "eos");
  const ignored = await run(
    e,
    request({ eos_token_ids: [seq[2]!], stop_conditions: { max_tokens: 10, ignore_eos: true } }),
  );
  deepStrictEqual(ignored.ids, seq);
  equal(ignored.last.finish_reason, "length");
});

Deno.test("cancellation ends the stream with a terminal cancelled chunk; abort(ctx) too", async () => {
  const e = await started({ delayMs: 5 });
  const ctx = new RequestContext();
  const stream = e.generate(request({ stop_conditions: { max_tokens: 10000 } }), ctx)
    [Symbol.asyncIterator]();
  equal((await stream.next()).value?.token_ids.length, 1);
  ctx.stop();
  const rest: LLMEngineOutput[] = [];
  for (let r = await stream.next(); !r.done; r = await stream.next()) rest.push(r.value);
  equal(rest.length, 1);
  equal(rest[0]!.finish_reason, "cancelled");
  equal(rest[0]!.completion_usage?.completion_tokens, 1);

  // abort(ctx) at the first chunk, 9,999 tokens (50 s at 5 ms) before the end.
  const ctx2 = new RequestContext();
  const pending = watch(
    validateStream(e.generate(request({ stop_conditions: { max_tokens: 10000 } }), ctx2), {
      promptTokens: 3,
    }),
  );
  await pending.first;
  await e.abort(ctx2);
  const chunks = await pending.done;
  equal(chunks.at(-1)!.finish_reason, "cancelled");
  ok(chunks.flatMap((c) => c.token_ids).length < 10000);
  equal(e.usedBlocks, 0);
});

function shutdown(e: unknown): boolean {
  return e instanceof EngineError && e.type === "EngineShutdown";
}

Deno.test("generate before start or after cleanup, and a second start, are EngineShutdown", async () => {
  const e = new MockEngine();
  await rejects(run(e, request()), shutdown);
  await e.start(0n);
  await rejects(e.start(0n), shutdown);
  equal(
    (await run(e, request())).last.finish_reason,
    "length",
    "still serving after a second start",
  );
  await e.cleanup();
  await e.cleanup();
  await rejects(run(e, request()), shutdown);
  await new MockEngine().cleanup();
});

Deno.test("bad sampling values are InvalidArgument before any chunk; others keep running", async () => {
  const e = await started();
  for (
    const sampling_options of [{ temperature: NaN }, { temperature: -1 }, { top_p: 0 }, {
      top_k: -2,
    }]
  ) {
    await rejects(
      run(e, request({ sampling_options })),
      (err: unknown) => err instanceof EngineError && err.type === "InvalidArgument",
    );
  }
  await rejects(run(e, request({ token_ids: [40000] })), /vocab/);
  // Its tokens cannot be constrained: refused by name, never answered as if they were.
  await rejects(
    run(e, request({ sampling_options: { guided_decoding: { json: { type: "object" } } } })),
    (err: unknown) =>
      err instanceof EngineError && err.type === "InvalidArgument" &&
      err.message.startsWith("request.sampling_options.guided_decoding:"),
  );
  equal((await run(e, request())).last.finish_reason, "length");
});

Deno.test("a pre-aborted signal ends cancelled before any token; a consumer's break frees its KV", async () => {
  const e = await started({ delayMs: 1 });
  try {
    await checkCancellation(e, { used: () => e.usedBlocks });
  } finally {
    await e.cleanup();
  }
});

Deno.test("drain stops admitting and waits for in-flight requests; cleanup cancels open streams", async () => {
  // In flight: drained and cleaned up at the first chunk, with more tokens still to come.
  const e = await started({ delayMs: 2 });
  const pending = watch(e.generate(request({ stop_conditions: { max_tokens: 20 } }), ctx()));
  await pending.first;
  const drained = e.drain();
  await rejects(run(e, request()), shutdown);
  await drained;
  const all = await pending.done;
  equal(all.at(-1)!.finish_reason, "length");
  equal(all.flatMap((c) => c.token_ids).length, 20, "the request in flight ran to its end");

  const e2 = await started({ delayMs: 2 });
  const open = watch(e2.generate(request({ stop_conditions: { max_tokens: 10000 } }), ctx()));
  await open.first;
  await e2.cleanup();
  equal((await open.done).at(-1)!.finish_reason, "cancelled");
});

Deno.test("fake KV blocks: events, prefix hits, gauges, and nothing left after requests end", async () => {
  const e = await started({ blockSize: 4, totalBlocks: 100 });
  const events: KvCacheEvent[] = [];
  const [source] = await e.kvEventSources();
  ok(source?.kind === "push");
  source.onReady({ publish: (ev) => events.push(ev) });
  const metrics = EngineMetrics.fromHierarchy(testHierarchy());
  deepStrictEqual(
    await e.setupMetrics({ model: "m", component: "c", model_load_time_seconds: 0, metrics }),
    {
      dp_ranks: [0],
    },
  );
  const prompt = [1, 2, 3, 4, 5, 6, 7, 8, 9];
  const ctx = new RequestContext();
  const it = e.generate(request({ token_ids: prompt, stop_conditions: { max_tokens: 3 } }), ctx)[
    Symbol.asyncIterator
  ]();
  await it.next();
  equal(e.usedBlocks, 3, "two full prompt blocks and one partial");
  const stored = events.filter((ev) => ev.type === "BlockStored");
  equal(stored.length, 2);
  const [first, second] = stored as Extract<KvCacheEvent, { type: "BlockStored" }>[];
  deepStrictEqual(first!.token_ids, [1, 2, 3, 4]);
  equal(first!.parent_block_hash, null);
  equal(second!.parent_block_hash, first!.block_hashes[0]);
  equal(second!.block_size, 4);
  await run(e, request({ token_ids: prompt, stop_conditions: { max_tokens: 1 } }));
  const scrape = metrics.render().body;
  ok(scrape.includes("dynamo_component_kv_cache_hit_rate{"), scrape);
  ok(/dynamo_component_kv_cache_hit_rate\{[^}]*\} 0.5\n/.test(scrape), "2 hits of 4 queries");
  while (!(await it.next()).done);
  equal(e.usedBlocks, 0);
  deepStrictEqual(
    events.filter((ev) => ev.type === "BlockRemoved").flatMap((ev) =>
      ev.type === "BlockRemoved" ? ev.block_hashes : []
    ),
    [first!.block_hashes[0], second!.block_hashes[0]],
  );
});

Deno.test("fake KV capacity: a prompt that can never fit is refused; output ends with length when the cache is full", async () => {
  const e = await started({ blockSize: 4, totalBlocks: 8, contextLength: 100 });
  await rejects(
    run(e, request({ token_ids: Array(32).fill(1) })),
    (err: unknown) =>
      err instanceof EngineError && err.type === "InvalidArgument" &&
      /32-token prompt and one generated token need 9 KV blocks; the KV cache holds 32 tokens/
        .test(err.message),
  );
  const full = await run(
    e,
    request({ token_ids: Array(20).fill(1), stop_conditions: { max_tokens: 50 } }),
  );
  equal(full.ids.length, 12, "20 prompt tokens and 12 more fill the 32-token cache");
  equal(full.last.finish_reason, "length");
  equal(e.usedBlocks, 0);
});

Deno.test("fake KV capacity: requests beyond the cache wait their turn, in order, and never overfill it", async () => {
  const e = await started({ blockSize: 4, totalBlocks: 8, contextLength: 100, delayMs: 1 });
  let most = 0;
  const log: string[] = [];
  let aStarted!: () => void;
  const aFirst = new Promise<void>((r) => (aStarted = r));
  const go = async (name: string, maxTokens: number, ctx = new RequestContext()) => {
    const req = request({
      token_ids: [name.charCodeAt(0), 2, 3, 4],
      stop_conditions: { max_tokens: maxTokens },
    });
    let first = true;
    for await (const c of e.generate(req, ctx)) {
      most = Math.max(most, e.usedBlocks);
      if (first) log.push(`${name} first`);
      if (first && name === "A") aStarted();
      first = false;
      if (c.finish_reason !== undefined) log.push(`${name} ${c.finish_reason}`);
    }
  };
  const a = go("A", 12); // 16 tokens: 4 of the 8 blocks
  await aFirst;
  const b = go("B", 28); // 32 tokens: the whole cache, so it waits for A
  const c = go("C", 4); // 2 blocks would fit beside A, but C came after B
  const gone = new RequestContext();
  const d = go("D", 4, gone);
  gone.stop(); // cancelled while waiting
  await Promise.all([a, b, c, d]);
  const at = (event: string) => log.indexOf(event);
  ok(at("A length") < at("B first") && at("B length") < at("C first"), log.join(", "));
  ok(log.includes("D cancelled"), log.join(", "));
  ok(most <= 8, `at most 8 blocks in use, saw ${most}`);
  equal(e.usedBlocks, 0);
});

Deno.test("Dynamo 1.5: llm mirrors the flat config; quiescent only when no request is live", async () => {
  const e = new MockEngine({ delayMs: 5 });
  equal(await e.isQuiescent(), true, "nothing runs before start()");
  equal(await e.healthCheckPayload(), null, "no probe before start()");
  const config = await e.start(0n);
  deepStrictEqual(config.llm, {
    context_length: 4096,
    kv_cache_block_size: 16,
    total_kv_blocks: 1024,
    max_num_seqs: 256,
    max_num_batched_tokens: 4096,
    data_parallel_size: 1,
    data_parallel_start_rank: 0,
  });
  const c = ctx();
  const it = e.generate(request({ stop_conditions: { max_tokens: 50 } }), c)
    [Symbol.asyncIterator]();
  await it.next();
  equal(await e.isQuiescent(), false, "a request is streaming");
  const drained = e.drain();
  equal(await e.isQuiescent(), false, "drain() waits for it");
  while (!(await it.next()).done);
  await drained;
  equal(await e.isQuiescent(), true, "quiescent once drain() resolved");
  await e.cleanup();
});

Deno.test("Dynamo 1.5: the health-check probe is one greedy token, marked is_probe", async () => {
  const e = await started();
  const probe = (await e.healthCheckPayload())!;
  equal(probe.is_probe, true);
  deepStrictEqual([probe.model, probe.token_ids, probe.stop_conditions], [
    "kiln-mock",
    [0],
    { max_tokens: 1, ignore_eos: true },
  ]);
  const { last, ids } = await run(e, probe);
  equal(ids.length, 1);
  equal(last.finish_reason, "length");
  await e.cleanup();
  equal(await e.healthCheckPayload(), null, "no probe once stopped");
});

Deno.test("Dynamo 1.5: the mock offers no control and refuses each by name", async () => {
  const e = await started();
  deepStrictEqual(await e.supportedControls(), []);
  for (const name of ["clear_kv_blocks", "constructor", "__proto__"]) {
    await rejects(
      e.engineControl(name, {}),
      (err: unknown) =>
        err instanceof EngineError && err.type === "InvalidArgument" &&
        err.message.includes(`"${name}" is not offered (it offers none)`),
      name,
    );
  }
  await e.cleanup();
});
