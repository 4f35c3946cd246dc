/**
 * KV events out of the process (issue 26): fortune's engine publishes through a ZMQ socket
 * (`ZmqKvPublisher`, vLLM's framing) while a random workload runs (shared prefixes,
 * cancellations, evictions in a 24-block cache), and an independent subscriber
 * (`kv_subscriber.py`: python3-zmq, python3-msgpack, python3-xxhash) that connects late rebuilds
 * the block set from the replay socket and the live stream. At the end its set is the engine's
 * prefix cache, every stored hash is Dynamo's router hash of its tokens, no sequence number is
 * missing, and a second subscriber that leaves midway takes nothing from the first. Then 20,000
 * synthetic events measure what the subscriber sustains while checking.
 */
import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { RequestContext } from "../../src/contract/engine.ts";
import { EngineError } from "../../src/contract/errors.ts";
import type { KvCacheEvent } from "../../src/contract/kv_events.ts";
import { ZmqKvPublisher } from "../../src/adapters/deno/kv_events_zmq.ts";
import { routerHash } from "../../src/engines/router_hash.ts";
import { bytes, collect, fortuneEngine, request } from "../support/fortune_engine.ts";
import { startSubscriber, type Subscriber } from "../support/kv_subscriber.ts";

/** A seeded pseudo-random source. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

/** `n` requests on shared prefixes, some cancelled after a few tokens. */
async function workload(e: Awaited<ReturnType<typeof fortuneEngine>>, n: number, seed: number) {
  const rnd = random(seed);
  const prefixes = ["The old fortune teller said ", "Once upon a time, in a land ", "A"].map(
    (p) => p.repeat(3).slice(0, 40),
  );
  const one = async () => {
    const prompt = bytes(
      prefixes[Math.floor(rnd() * prefixes.length)]! +
        "xyz abc ".slice(0, Math.floor(rnd() * 8)).repeat(Math.floor(rnd() * 4)),
    );
    const req = request(prompt, {
      stop_conditions: { max_tokens: 1 + Math.floor(rnd() * 24), ignore_eos: true },
    });
    if (rnd() < 0.3) {
      const ctx = new RequestContext();
      const stopAt = 1 + Math.floor(rnd() * 4);
      let got = 0;
      for await (const c of e.generate(req, ctx)) {
        got += c.token_ids.length;
        if (got >= stopAt) ctx.stop();
      }
    } else {
      await collect(e, req);
    }
  };
  for (let i = 0; i < n; i += 6) await Promise.all(Array.from({ length: 6 }, one));
}

const tick = () => new Promise((r) => setTimeout(r, 20));
/** The next turn of the event loop: the events published before it go out as one batch. */
const turn = () => new Promise((r) => setTimeout(r, 0));

Deno.test("KV events over ZMQ: a late subscriber rebuilds the engine's block set exactly", async () => {
  const engine = await fortuneEngine({ kvBlocks: 24, maxNumSeqs: 6 });
  await engine.start(0n);
  const pub = await ZmqKvPublisher.bind({
    endpoint: "tcp://127.0.0.1:*",
    replayEndpoint: "tcp://127.0.0.1:*",
  });
  const subs: Subscriber[] = [];
  try {
    const [source] = await engine.kvEventSources();
    ok(source?.kind === "push");
    source.onReady(pub);
    await workload(engine, 24, 1); // before any subscriber: the late one replays it
    await tick();
    const endpoints = { pub: pub.endpoints.pub, replay: pub.endpoints.replay! };
    const a = await startSubscriber(endpoints);
    subs.push(a);
    const leaver = await startSubscriber(endpoints, ["--exit-after", "3"]);
    subs.push(leaver);
    await workload(engine, 36, 2);
    await tick();
    equal(engine.usedBlocks, 0);
    const quitter = await leaver.result;
    equal(quitter.live_batches, 3, "the second subscriber left after 3 live batches");

    // 20,000 events more: stored and removed again, so the block set is unchanged.
    const hash = await routerHash();
    const t0 = performance.now();
    const before = pub.sent.events;
    for (let b = 0; b < 100; b++) {
      const stored: bigint[] = [];
      for (let i = 0; i < 100; i++) {
        const tokens = Array.from({ length: 16 }, (_, j) => (b * 7919 + i * 31 + j) % 260);
        const h = hash(null, tokens);
        stored.push(h);
        pub.publish(
          {
            type: "BlockStored",
            block_hashes: [h],
            parent_block_hash: null,
            token_ids: tokens,
            block_size: 16,
          } satisfies KvCacheEvent,
        );
      }
      await turn();
      for (const h of stored) pub.publish({ type: "BlockRemoved", block_hashes: [h] });
      await turn();
    }
    const stress = pub.sent.events - before;
    await a.done(pub.sent.batches);
    const got = await a.result;
    const seconds = (performance.now() - t0) / 1000;
    console.log(
      `subscriber: ${got.events} events in ${got.batches} batches; the last ${stress} ` +
        `(${(stress / seconds).toFixed(0)} events/s sustained, checked as they came)`,
    );
    equal(got.batches, pub.sent.batches, "every batch, no sequence number missing");
    equal(got.events, pub.sent.events);
    equal(got.live_gaps, 0, "no gap in the live stream of a connected subscriber");
    ok(got.replayed > 0, "the late subscriber replayed the past");
    deepStrictEqual(got.mismatches, [], "every hash is the router's hash of its tokens");
    equal(got.unknown_removals, 0);
    deepStrictEqual(got.dp_ranks, [0]);
    const table = engine.cachedBlockHashes().map(String).sort();
    ok(table.length > 0);
    deepStrictEqual(got.blocks, table, "the subscriber's block set is the engine's prefix cache");
  } finally {
    for (const s of subs) await s.done(0).catch(() => {});
    await pub.close();
    await engine.cleanup();
  }
});

Deno.test("KV events over ZMQ: an endpoint that cannot bind is InvalidArgument naming it", async () => {
  const taken = await ZmqKvPublisher.bind({ endpoint: "tcp://127.0.0.1:*" });
  try {
    for (const endpoint of [taken.endpoints.pub, "tcp://256.0.0.1:5", "nonsense"]) {
      await rejects(
        ZmqKvPublisher.bind({ endpoint }),
        (e) =>
          e instanceof EngineError && e.type === "InvalidArgument" &&
          e.message.includes(endpoint),
        endpoint,
      );
    }
  } finally {
    await taken.close();
  }
});
