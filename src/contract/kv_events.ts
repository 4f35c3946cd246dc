/**
 * KV cache events in the shape Dynamo's KV router consumes (vLLM's event schema):
 * a worker publishes which prefix blocks it stored or evicted so requests can be routed
 * to the worker that already holds their prefix.
 */

export interface BlockStored {
  type: "BlockStored";
  block_hashes: bigint[];
  parent_block_hash: bigint | null;
  token_ids: number[];
  block_size: number;
  lora_id?: number | null;
}

export interface BlockRemoved {
  type: "BlockRemoved";
  block_hashes: bigint[];
}

export interface AllBlocksCleared {
  type: "AllBlocksCleared";
}

export type KvCacheEvent = BlockStored | BlockRemoved | AllBlocksCleared;

/** Where a published event goes; the framework hands one to a push source. */
export interface KvEventPublisher {
  publish(event: KvCacheEvent): void;
}

/**
 * One source per data-parallel rank. `push`: the engine publishes through the publisher
 * it is given in `onReady`. `zmq`: the engine already publishes on a ZMQ endpoint.
 */
export type KvEventSource =
  | { kind: "push"; dp_rank: number; onReady(publisher: KvEventPublisher): void }
  | { kind: "zmq"; dp_rank: number; endpoint: string; topic?: string };
