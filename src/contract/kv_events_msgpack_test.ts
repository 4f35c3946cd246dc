import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { decode, encode } from "@msgpack/msgpack";
import { EngineError } from "./errors.ts";
import type { KvCacheEvent } from "./kv_events.ts";
import { decodeKvBatch, encodeKvBatch, KV_EVENT_ENCODINGS } from "./kv_events_msgpack.ts";

const BIG = 0xfedc_ba98_7654_3210n; // above 2^63: a u64 that no i64 holds

const EVENTS: KvCacheEvent[] = [
  {
    type: "BlockStored",
    block_hashes: [BIG, 7n],
    parent_block_hash: 3n,
    token_ids: [1, 2, 3, 4],
    block_size: 2,
    lora_id: null,
  },
  {
    type: "BlockStored",
    block_hashes: [9n],
    parent_block_hash: null,
    token_ids: [5, 6],
    block_size: 2,
    lora_id: 4,
  },
  { type: "BlockRemoved", block_hashes: [BIG] },
  { type: "AllBlocksCleared" },
];

const raw = (bytes: Uint8Array) => decode(bytes, { useBigInt64: true });

Deno.test("every encoding decodes back into the same events", () => {
  for (const encoding of KV_EVENT_ENCODINGS) {
    const got = decodeKvBatch(encodeKvBatch(12.5, EVENTS, 3, encoding));
    deepStrictEqual(got, { ts: 12.5, events: EVENTS, dpRank: 3 }, encoding);
  }
});

// Hashes are written as 64-bit integers whatever their size, so they read back as bigints.
Deno.test("positional: the batch and each event are arrays, the tag first", () => {
  deepStrictEqual(raw(encodeKvBatch(1, EVENTS, 0)), [1, [
    ["BlockStored", [BIG, 7n], 3n, [1, 2, 3, 4], 2, null, "GPU"],
    ["BlockStored", [9n], null, [5, 6], 2, 4, "GPU"],
    ["BlockRemoved", [BIG], "GPU"],
    ["AllBlocksCleared"],
  ], 0]);
});

Deno.test("map: the batch and each event are maps of vLLM's field names, tagged by type", () => {
  const events = [
    {
      type: "BlockStored",
      block_hashes: [BIG, 7n],
      parent_block_hash: 3n,
      token_ids: [1, 2, 3, 4],
      block_size: 2,
      lora_id: null,
      medium: "GPU",
      lora_name: null,
    },
    {
      type: "BlockStored",
      block_hashes: [9n],
      parent_block_hash: null,
      token_ids: [5, 6],
      block_size: 2,
      lora_id: 4,
      medium: "GPU",
      lora_name: null,
    },
    { type: "BlockRemoved", block_hashes: [BIG], medium: "GPU" },
    { type: "AllBlocksCleared" },
  ];
  const map = raw(encodeKvBatch(1, EVENTS, 2, "map")) as Record<string, unknown>;
  deepStrictEqual(map, { ts: 1, events, data_parallel_rank: 2 });
  deepStrictEqual(Object.keys((map.events as object[])[0]!)[0], "type", "the tag comes first");
  deepStrictEqual(raw(encodeKvBatch(1, EVENTS, 2, "map-events")), [1, events, 2]);
});

Deno.test("a hash above 2^63 goes out as a msgpack uint64 (0xcf) in every encoding", () => {
  const bytes = [...new Uint8Array(8)].map((_, i) => Number((BIG >> BigInt(56 - 8 * i)) & 0xffn));
  for (const encoding of KV_EVENT_ENCODINGS) {
    const payload = encodeKvBatch(0, [{ type: "BlockRemoved", block_hashes: [BIG] }], 0, encoding);
    const at = payload.findIndex((b, i) =>
      b === 0xcf && bytes.every((x, j) => payload[i + 1 + j] === x)
    );
    ok(at >= 0, encoding);
  }
});

Deno.test("malformed batches and events are InvalidArgument naming what is wrong", () => {
  const cases: [unknown, RegExp][] = [
    [42, /batch/],
    [{ ts: 1 }, /batch/],
    [[1, [["NoSuchEvent"]], 0], /unknown tag "NoSuchEvent"/],
    [[1, [{ type: "BlockRemoved", block_hashes: [-1] }], 0], /a block hash, got -1/],
    [[1, [{ type: "BlockRemoved" }], 0], /block_hashes: an array expected/],
    [[1, [{ block_hashes: [1] }], 0], /unknown tag/],
    [[1, ["BlockStored"], 0], /a tagged array or map expected/],
    [{ ts: 1, events: [{ type: "BlockStored", block_hashes: [1], token_ids: 5 }] }, /token_ids/],
  ];
  for (const [value, message] of cases) {
    throws(
      () => decodeKvBatch(encode(value, { useBigInt64: true })),
      (e: unknown) =>
        e instanceof EngineError && e.type === "InvalidArgument" && message.test(e.message),
      JSON.stringify(value),
    );
  }
  equal(decodeKvBatch(encode([1, []])).dpRank, null, "a batch without a rank");
});
