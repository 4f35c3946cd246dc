/**
 * The paged KV cache's bookkeeping: which blocks each sequence owns, reference counts, and a
 * prefix cache. A full block is keyed by a hash chained over its tokens and its parent's hash,
 * so a later request with the same prefix reuses it. Released blocks that hold a cached prefix
 * stay resident (evictable, least recently used first) until their space is needed.
 */
import type { KvCacheEvent } from "../../contract/kv_events.ts";
import { blockHash } from "../block_hash.ts";

/** Size and event hook of a {@linkcode BlockManager}. */
export interface BlockManagerOptions {
  /** Blocks in the KV cache. */
  numBlocks: number;
  /** Tokens per block. */
  blockSize: number;
  /** Hears `BlockStored` / `BlockRemoved` events as prefix blocks are cached and evicted. */
  onEvent?: (event: KvCacheEvent) => void;
}

interface Block {
  id: number;
  refs: number;
  hash: bigint | undefined;
  /** Last release time, for LRU eviction of cached free blocks. */
  lastUse: number;
}

/** A sequence's blocks, in order, and how many of its tokens are in full, hashed blocks. */
export interface SeqBlocks {
  /** Ids of the sequence's blocks, in token order. */
  blocks: number[];
  /** Hash of each full block registered so far (the chain's parents). */
  hashes: bigint[];
}

/** Allocates the paged KV cache's blocks to sequences, sharing cached prefix blocks. */
export class BlockManager {
  /** Blocks in the cache. */
  readonly numBlocks: number;
  /** Tokens per block. */
  readonly blockSize: number;
  readonly #blocks: Block[];
  /** Blocks with no references and no cached prefix. */
  readonly #free: number[] = [];
  /** Blocks with no references that still hold a cached prefix, by hash. */
  readonly #cached = new Map<bigint, Block>();
  readonly #onEvent: ((e: KvCacheEvent) => void) | undefined;
  #clock = 0;
  /** Full prompt blocks looked up in the prefix cache so far. */
  queries = 0;
  /** Of those lookups, the ones found cached. */
  hits = 0;

  /** A cache with every block free. */
  constructor(options: BlockManagerOptions) {
    this.numBlocks = options.numBlocks;
    this.blockSize = options.blockSize;
    this.#onEvent = options.onEvent;
    this.#blocks = Array.from(
      { length: this.numBlocks },
      (_, id) => ({ id, refs: 0, hash: undefined, lastUse: 0 }),
    );
    for (let i = this.numBlocks - 1; i >= 0; i--) this.#free.push(i);
  }

  /** Blocks a new allocation can take: free ones and evictable cached ones. */
  get available(): number {
    return this.#free.length + [...this.#cached.values()].filter((b) => b.refs === 0).length;
  }

  /** Blocks referenced by a running sequence. */
  get used(): number {
    return this.#blocks.filter((b) => b.refs > 0).length;
  }

  /** Prefix-cache hit rate over full prompt blocks looked up, or undefined before any lookup. */
  get hitRate(): number | undefined {
    return this.queries === 0 ? undefined : this.hits / this.queries;
  }

  #take(): Block | undefined {
    const id = this.#free.pop();
    if (id !== undefined) return this.#blocks[id]!;
    let victim: Block | undefined;
    for (const b of this.#cached.values()) {
      if (b.refs === 0 && (victim === undefined || b.lastUse < victim.lastUse)) victim = b;
    }
    if (victim === undefined) return undefined;
    this.#cached.delete(victim.hash!);
    this.#onEvent?.({ type: "BlockRemoved", block_hashes: [victim.hash!] });
    victim.hash = undefined;
    return victim;
  }

  /**
   * Blocks for a prompt: cached full blocks of its prefix are shared, the rest allocated.
   * Returns undefined (allocating nothing) when there is not room for `tokens + extra` tokens.
   * `cachedTokens` is how many leading tokens need no prefill.
   */
  allocate(
    tokens: readonly number[],
    extra = 0,
  ): { seq: SeqBlocks; cachedTokens: number } | undefined {
    const bs = this.blockSize;
    const needed = Math.ceil((tokens.length + extra) / bs);
    const hits: Block[] = [];
    const hashes: bigint[] = [];
    let parent: bigint | null = null;
    // Keep at least one prompt token to compute: a fully cached prompt still needs its logits.
    const fullBlocks = Math.floor(Math.max(0, tokens.length - 1) / bs);
    for (let i = 0; i < fullBlocks; i++) {
      const h = blockHash(parent, tokens.slice(i * bs, (i + 1) * bs));
      const b = this.#cached.get(h);
      if (b === undefined) break;
      hits.push(b);
      hashes.push(h);
      parent = h;
    }
    const fresh = needed - hits.length;
    const spare = this.#free.length +
      [...this.#cached.values()].filter((b) => b.refs === 0 && !hits.includes(b)).length;
    if (fresh > spare) return undefined;
    this.queries += fullBlocks;
    this.hits += hits.length;
    for (const b of hits) b.refs++;
    const blocks = hits.map((b) => b.id);
    for (let i = 0; i < fresh; i++) {
      const b = this.#take()!;
      b.refs = 1;
      blocks.push(b.id);
    }
    return { seq: { blocks, hashes }, cachedTokens: hits.length * bs };
  }

  /** Grow `seq` to hold `length` tokens; false when no block is left. */
  ensure(seq: SeqBlocks, length: number): boolean {
    while (seq.blocks.length * this.blockSize < length) {
      const b = this.#take();
      if (b === undefined) return false;
      b.refs = 1;
      seq.blocks.push(b.id);
    }
    return true;
  }

  /**
   * Register the full blocks of `seq` whose tokens are now all computed (`tokens` is the
   * sequence so far, `computed` how many have their K/V written), publishing BlockStored.
   */
  commit(seq: SeqBlocks, tokens: readonly number[], computed: number): void {
    const bs = this.blockSize;
    while ((seq.hashes.length + 1) * bs <= computed) {
      const i = seq.hashes.length;
      const parent = i === 0 ? null : seq.hashes[i - 1]!;
      const blockTokens = tokens.slice(i * bs, (i + 1) * bs);
      const h = blockHash(parent, blockTokens);
      seq.hashes.push(h);
      const b = this.#blocks[seq.blocks[i]!]!;
      if (b.hash !== undefined || this.#cached.has(h)) continue; // shared, or an equal block exists
      b.hash = h;
      this.#cached.set(h, b);
      this.#onEvent?.({
        type: "BlockStored",
        block_hashes: [h],
        parent_block_hash: parent,
        token_ids: blockTokens,
        block_size: bs,
      });
    }
  }

  /** Drop a sequence's references. Hashed blocks stay cached; the others are freed. */
  release(seq: SeqBlocks): void {
    this.#clock++;
    for (const id of seq.blocks) {
      const b = this.#blocks[id]!;
      if (b.refs === 0) continue;
      b.refs--;
      if (b.refs > 0) continue;
      b.lastUse = this.#clock;
      if (b.hash === undefined) this.#free.push(id);
    }
    seq.blocks = [];
    seq.hashes = [];
  }

  /** Forget every block (cleanup). */
  clear(): void {
    for (const b of this.#blocks) {
      b.refs = 0;
      b.hash = undefined;
    }
    this.#cached.clear();
    this.#free.length = 0;
    for (let i = this.numBlocks - 1; i >= 0; i--) this.#free.push(i);
    this.#onEvent?.({ type: "AllBlocksCleared" });
  }
}
