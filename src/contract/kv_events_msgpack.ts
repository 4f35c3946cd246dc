/**
 * KV events as vLLM's ZMQ publisher frames them, which Dynamo's KV router (and llm-d's, and
 * vLLM's own consumers) read: a batch is msgpack `[ts, [event, ...], data_parallel_rank]`, each
 * event a tagged array (`["BlockStored", block_hashes, parent_block_hash, token_ids, block_size,
 * lora_id, medium]`, `["BlockRemoved", block_hashes, medium]`, `["AllBlocksCleared"]`), block
 * hashes as msgpack unsigned 64-bit integers. On the socket each batch is three frames: the topic,
 * its sequence number as 8 bytes big-endian, and the payload.
 *
 * @module
 */
import { decode, encode } from "@msgpack/msgpack";
import { EngineError } from "./errors.ts";
import type { KvCacheEvent } from "./kv_events.ts";

/** Where the blocks live, as vLLM names it. */
export const MEDIUM = "GPU";

/** One event as the array vLLM's tagged structs encode to. */
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

/** The msgpack payload of a batch of `events` at `ts` (seconds since the epoch). */
export function encodeKvBatch(
  ts: number,
  events: readonly KvCacheEvent[],
  dpRank: number,
): Uint8Array {
  return encode([ts, events.map(eventArray), dpRank], { useBigInt64: true });
}

/** An 8-byte big-endian sequence number frame. */
export function seqFrame(seq: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigInt64(0, seq, false);
  return out;
}

const u64 = (v: unknown): bigint => {
  if (typeof v === "bigint") return v;
  if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  throw EngineError.invalidArgument(`kv event: a block hash, got ${String(v)}`);
};

/** Read a batch back (tests, and consumers written in TypeScript); `InvalidArgument` if malformed. */
export function decodeKvBatch(
  payload: Uint8Array,
): { ts: number; events: KvCacheEvent[]; dpRank: number | null } {
  const v = decode(payload, { useBigInt64: true });
  if (!Array.isArray(v) || v.length < 2 || !Array.isArray(v[1])) {
    throw EngineError.invalidArgument("kv event batch: [ts, [events], dp_rank] expected");
  }
  const events = (v[1] as unknown[]).map((raw): KvCacheEvent => {
    const e = raw as unknown[];
    if (!Array.isArray(e)) throw EngineError.invalidArgument("kv event: an array expected");
    switch (e[0]) {
      case "BlockStored":
        return {
          type: "BlockStored",
          block_hashes: (e[1] as unknown[]).map(u64),
          parent_block_hash: e[2] === null ? null : u64(e[2]),
          token_ids: (e[3] as (number | bigint)[]).map(Number),
          block_size: Number(e[4]),
          lora_id: e[5] === null || e[5] === undefined ? null : Number(e[5]),
        };
      case "BlockRemoved":
        return { type: "BlockRemoved", block_hashes: (e[1] as unknown[]).map(u64) };
      case "AllBlocksCleared":
        return { type: "AllBlocksCleared" };
    }
    throw EngineError.invalidArgument(`kv event: unknown tag ${JSON.stringify(e[0])}`);
  });
  return {
    ts: Number(v[0]),
    events,
    dpRank: v[2] === undefined || v[2] === null ? null : Number(v[2]),
  };
}
