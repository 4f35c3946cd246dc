/**
 * KV events as vLLM's ZMQ publisher frames them, which Dynamo's KV router (and llm-d's, and
 * vLLM's own consumers) read. On the socket each batch is three frames: the topic, its sequence
 * number as 8 bytes big-endian, and the msgpack payload. The payload has three encodings
 * ({@linkcode KvEventEncoding}), all with block hashes as msgpack unsigned 64-bit integers:
 *
 * - `positional` (the default; vLLM before its map change, msgspec's `array_like`): the batch
 *   `[ts, [event, ...], data_parallel_rank]`, each event a tagged array:
 *   `["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium]`,
 *   `["BlockRemoved", block_hashes, medium]`, `["AllBlocksCleared"]`.
 * - `map` (vLLM's structs without `array_like`): the batch a map `{ts, events,
 *   data_parallel_rank}`, each event a map of its field names, tagged by `type`:
 *   `{type: "BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id,
 *   medium, lora_name}`, `{type: "BlockRemoved", block_hashes, medium}`,
 *   `{type: "AllBlocksCleared"}`.
 * - `map-events`: the events as `map` has them inside the positional batch, the shape
 *   captured from vLLM 0.26's publisher and the one Dynamo's ZMQ reader decodes.
 *
 * @module
 */
import { decode, encode } from "@msgpack/msgpack";
import { describe } from "./describe.ts";
import { EngineError } from "./errors.ts";
import type { KvCacheEvent } from "./kv_events.ts";

/** Where the blocks live, as vLLM names it. */
export const MEDIUM = "GPU";

/** The payload encodings, by name. */
export const KV_EVENT_ENCODINGS = ["positional", "map", "map-events"] as const;

/** One of {@linkcode KV_EVENT_ENCODINGS}; see the module's description. */
export type KvEventEncoding = typeof KV_EVENT_ENCODINGS[number];

/** One event as the array vLLM's tagged `array_like` structs encode to. */
function eventArray(e: KvCacheEvent): unknown[] {
  switch (e.type) {
    case "BlockStored":
      return [
        "BlockStored",
        e.block_hashes,
        e.parent_block_hash,
        e.token_ids,
        e.block_size,
        e.lora_id ?? null,
        MEDIUM,
      ];
    case "BlockRemoved":
      return ["BlockRemoved", e.block_hashes, MEDIUM];
    case "AllBlocksCleared":
      return ["AllBlocksCleared"];
  }
}

/** One event as the map vLLM's tagged structs encode to: the tag first, then every field. */
function eventMap(e: KvCacheEvent): Record<string, unknown> {
  switch (e.type) {
    case "BlockStored":
      return {
        type: "BlockStored",
        block_hashes: e.block_hashes,
        parent_block_hash: e.parent_block_hash,
        token_ids: e.token_ids,
        block_size: e.block_size,
        lora_id: e.lora_id ?? null,
        medium: MEDIUM,
        lora_name: null,
      };
    case "BlockRemoved":
      return { type: "BlockRemoved", block_hashes: e.block_hashes, medium: MEDIUM };
    case "AllBlocksCleared":
      return { type: "AllBlocksCleared" };
  }
}

/**
 * The msgpack payload of a batch of `events` at `ts` (seconds since the epoch) from data-parallel
 * rank `dpRank`, in `encoding` (default `positional`).
 */
export function encodeKvBatch(
  ts: number,
  events: readonly KvCacheEvent[],
  dpRank: number,
  encoding: KvEventEncoding = "positional",
): Uint8Array {
  const one: (e: KvCacheEvent) => unknown = encoding === "positional" ? eventArray : eventMap;
  const batch = encoding === "map"
    ? { ts, events: events.map(one), data_parallel_rank: dpRank }
    : [ts, events.map(one), dpRank];
  return encode(batch, { useBigInt64: true });
}

/** An 8-byte big-endian sequence number frame. */
export function seqFrame(seq: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigInt64(0, seq, false);
  return out;
}

const bad = (why: string) => EngineError.invalidArgument(`kv event: ${why}`);

const u64 = (v: unknown): bigint => {
  if (typeof v === "bigint") return v;
  if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  throw bad(`a block hash, got ${describe(v)}`);
};

const hashes = (v: unknown): bigint[] => {
  if (!Array.isArray(v)) throw bad(`block_hashes: an array expected, got ${describe(v)}`);
  return v.map(u64);
};

const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);

/** One event, from its tagged array or its tagged map. */
function readEvent(raw: unknown): KvCacheEvent {
  let f: (name: string, index: number) => unknown;
  if (Array.isArray(raw)) f = (_, i) => raw[i];
  else if (isMap(raw)) f = (name) => raw[name];
  else throw bad(`a tagged array or map expected, got ${describe(raw)}`);
  const tag = f("type", 0);
  switch (tag) {
    case "BlockStored": {
      const parent = f("parent_block_hash", 2);
      const tokens = f("token_ids", 3);
      if (!Array.isArray(tokens)) {
        throw bad(`token_ids: an array expected, got ${describe(tokens)}`);
      }
      const lora = f("lora_id", 5);
      return {
        type: "BlockStored",
        block_hashes: hashes(f("block_hashes", 1)),
        parent_block_hash: parent === null || parent === undefined ? null : u64(parent),
        token_ids: tokens.map(Number),
        block_size: Number(f("block_size", 4)),
        lora_id: lora === null || lora === undefined ? null : Number(lora),
      };
    }
    case "BlockRemoved":
      return { type: "BlockRemoved", block_hashes: hashes(f("block_hashes", 1)) };
    case "AllBlocksCleared":
      return { type: "AllBlocksCleared" };
  }
  throw bad(`unknown tag ${describe(tag)}`);
}

/**
 * Read a batch back in any of the three encodings (tests, and consumers written in TypeScript);
 * `InvalidArgument` if malformed.
 */
export function decodeKvBatch(
  payload: Uint8Array,
): { ts: number; events: KvCacheEvent[]; dpRank: number | null } {
  const v = decode(payload, { useBigInt64: true });
  const [ts, events, rank] = Array.isArray(v)
    ? [v[0], v[1], v[2]]
    : isMap(v)
    ? [v.ts, v.events, v.data_parallel_rank]
    : [undefined, undefined, undefined];
  if (ts === undefined || !Array.isArray(events)) {
    throw EngineError.invalidArgument(
      "kv event batch: [ts, [events], dp_rank] or {ts, events, data_parallel_rank} expected",
    );
  }
  return {
    ts: Number(ts),
    events: events.map(readEvent),
    dpRank: rank === undefined || rank === null ? null : Number(rank),
  };
}
