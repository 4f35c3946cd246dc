/**
 * The KV event payload encodings (`serve --kv-events-encoding positional|map|map-events`) read
 * by a consumer that is not Kiln: Debian's python3-msgpack decodes every encoding into the same
 * events (`kv_decode.py`), and the independent subscriber (`kv_subscriber.py`) rebuilds the block
 * set from map-encoded batches on a live ZMQ socket, replay included, and from `serve`'s.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import type { KvCacheEvent } from "../../src/contract/kv_events.ts";
import { encodeKvBatch, KV_EVENT_ENCODINGS } from "../../src/contract/kv_events_msgpack.ts";
import { ZmqKvPublisher } from "../../src/adapters/deno/kv_events_zmq.ts";
import { routerHash } from "../../src/engines/router_hash.ts";
import { startServer } from "../server/server.ts";
import { PYTHON } from "../support/python.ts";
import { startSubscriber } from "../support/kv_subscriber.ts";

const DECODER = new URL("./kv_decode.py", import.meta.url).pathname;
const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");

/** Events of every kind, a hash above 2^63 and a LoRA id among them. */
const EVENTS: KvCacheEvent[] = [
  {
    type: "BlockStored",
    block_hashes: [0xfedc_ba98_7654_3210n, 5n],
    parent_block_hash: 1n,
    token_ids: [1, 2, 3, 4],
    block_size: 2,
    lora_id: null,
  },
  {
    type: "BlockStored",
    block_hashes: [6n],
    parent_block_hash: null,
    token_ids: [9, 8],
    block_size: 2,
    lora_id: 3,
  },
  { type: "BlockRemoved", block_hashes: [5n, 0xfedc_ba98_7654_3210n] },
  { type: "AllBlocksCleared" },
];

/** `EVENTS` as kv_decode.py prints them (hashes as decimal strings). */
const expected = EVENTS.map((e) =>
  e.type === "BlockStored"
    ? {
      ...e,
      block_hashes: e.block_hashes.map(String),
      parent_block_hash: e.parent_block_hash === null ? null : String(e.parent_block_hash),
    }
    : e.type === "BlockRemoved"
    ? { ...e, block_hashes: e.block_hashes.map(String) }
    : e
);

Deno.test("python3-msgpack decodes every encoding into the same events, laid out as named", async () => {
  const input = KV_EVENT_ENCODINGS.map((name) =>
    JSON.stringify({ name, payload: hex(encodeKvBatch(1.5, EVENTS, 2, name)) })
  ).join("\n");
  const child = new Deno.Command(PYTHON, {
    args: [DECODER],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(input + "\n"));
  await writer.close();
  const out = await child.output();
  equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const got = new TextDecoder().decode(out.stdout).trim().split("\n").map((l) => JSON.parse(l));
  deepStrictEqual(got.map((g) => [g.name, g.batch, g.event]), [
    ["positional", "list", ["list"]],
    ["map", "dict", ["dict"]],
    ["map-events", "list", ["dict"]],
  ]);
  for (const g of got) {
    deepStrictEqual({ ts: g.ts, dp_rank: g.dp_rank, events: g.events }, {
      ts: 1.5,
      dp_rank: 2,
      events: expected,
    }, g.name);
  }
});

const LAYOUT = { "map": "dict/dict", "map-events": "list/dict" } as const;

for (const encoding of ["map", "map-events"] as const) {
  Deno.test(`a subscriber rebuilds the block set from ${encoding}-encoded batches over ZMQ`, async () => {
    const pub = await ZmqKvPublisher.bind({
      endpoint: "tcp://127.0.0.1:*",
      replayEndpoint: "tcp://127.0.0.1:*",
      encoding,
    });
    try {
      const hash = await routerHash();
      const stored: bigint[] = [];
      const turn = () => new Promise((r) => setTimeout(r, 0));
      // Published before the subscriber connects: it reads these from the replay socket.
      for (let i = 0; i < 6; i++) {
        const tokens = Array.from({ length: 4 }, (_, j) => i * 10 + j);
        const parent = stored.at(-1) ?? null;
        stored.push(hash(parent, tokens));
        pub.publish({
          type: "BlockStored",
          block_hashes: [stored.at(-1)!],
          parent_block_hash: parent,
          token_ids: tokens,
          block_size: 4,
        });
        await turn();
      }
      const endpoints = { pub: pub.endpoints.pub, replay: pub.endpoints.replay! };
      const sub = await startSubscriber(endpoints);
      pub.publish({ type: "BlockRemoved", block_hashes: stored.slice(4) });
      await turn();
      await sub.done(pub.sent.batches);
      const got = await sub.result;
      equal(got.batches, 7);
      deepStrictEqual(got.mismatches, [], "every hash is the router's hash of its tokens");
      equal(got.unknown_removals, 0);
      deepStrictEqual(got.blocks, stored.slice(0, 4).map(String).sort());
      deepStrictEqual(got.dp_ranks, [0]);
      deepStrictEqual(got.layouts, [LAYOUT[encoding]], "what went out on the socket");
    } finally {
      await pub.close();
    }
  });
}

Deno.test("serve --kv-events-encoding map: what a request caches goes out as maps", async () => {
  const s = await startServer([
    "--kv-events",
    "tcp://127.0.0.1:*",
    "--kv-events-replay",
    "tcp://127.0.0.1:*",
    "--kv-events-encoding",
    "map",
  ]);
  try {
    let bound: RegExpMatchArray | null = null;
    for (let i = 0; i < 100 && !bound; i++) {
      bound = s.log().match(/KV events bound at (\S+), replay at (\S+)/);
      if (!bound) await new Promise((r) => setTimeout(r, 50));
    }
    ok(bound, s.log());
    ok(s.log().includes(", map encoding"), "the startup line names the encoding");
    const sub = await startSubscriber({ pub: bound[1]!, replay: bound[2]! });
    const res = await fetch(`${s.url}/v1/engine/generate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        token_ids: [256, ...new TextEncoder().encode("map ".repeat(12))],
        stop_conditions: { max_tokens: 2 },
      }),
    });
    equal(res.status, 200);
    await res.text();
    await sub.done();
    const got = await sub.result;
    deepStrictEqual(got.layouts, ["dict/dict"]);
    deepStrictEqual(got.mismatches, []);
    ok(got.blocks.length >= 3, "the prompt's full blocks");
  } finally {
    await s.stop();
  }
});
