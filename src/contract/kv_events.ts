/**
 * KV cache events in the shape Dynamo's KV router consumes (vLLM's event schema):
 * a worker publishes which prefix blocks it stored or evicted so requests can be routed
 * to the worker that already holds their prefix.
 *
 * Block hashes are u64s, as in vLLM's integer block hashes. `WebGpuEngine` publishes the hashes
 * Dynamo's KV router computes from a request's tokens (`engines/router_hash.ts`: XXH3-64, seed
 * 1337, over each block's u32 little-endian tokens, chained over the parent's hash), so a router
 * can match a request's blocks to the events without a table of its own; the cache itself keys
 * blocks by a SHA-256 chain and checks tokens on a hit. The mock engine publishes the low 64 bits
 * of that SHA-256 key (`engines/block_hash.ts`).
 */

/** Blocks of a prefix were stored in the KV cache. */
export interface BlockStored {
  /** The event's kind. */
  type: "BlockStored";
  /** Hashes (u64) of the stored blocks, in prefix order. */
  block_hashes: bigint[];
  /** Hash of the block before the first stored one; `null` at the start of a sequence. */
  parent_block_hash: bigint | null;
  /** The tokens of the stored blocks, concatenated (`block_size` per block). */
  token_ids: number[];
  /** Tokens per block. */
  block_size: number;
  /** The LoRA adapter the blocks belong to; absent or `null` for the base model. */
  lora_id?: number | null;
}

/** Blocks were evicted from the KV cache. */
export interface BlockRemoved {
  /** The event's kind. */
  type: "BlockRemoved";
  /** Hashes of the evicted blocks. */
  block_hashes: bigint[];
}

/** Every block was evicted (e.g. on cleanup). */
export interface AllBlocksCleared {
  /** The event's kind. */
  type: "AllBlocksCleared";
}

/** Any KV cache event, discriminated by `type`. */
export type KvCacheEvent = BlockStored | BlockRemoved | AllBlocksCleared;

/** Where a published event goes; the framework hands one to a push source. */
export interface KvEventPublisher {
  /** Send one event to the router. */
  publish(event: KvCacheEvent): void;
}

/**
 * One source per data-parallel rank. `push`: the engine publishes through the publisher
 * it is given in `onReady`. `zmq`: the engine already publishes on a ZMQ endpoint.
 */
export type KvEventSource =
  | { kind: "push"; dp_rank: number; onReady(publisher: KvEventPublisher): void }
  | { kind: "zmq"; dp_rank: number; endpoint: string; topic?: string };
