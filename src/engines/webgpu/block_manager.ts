/**
 * The paged KV cache's bookkeeping: which blocks each sequence owns, reference counts, and a
 * prefix cache. A full block is keyed by SHA-256 chained over its tokens and its parent's key
 * (`block_hash.ts`), so a later request with the same prefix reuses it. A hit never rests on the
 * key alone: each cached block keeps its tokens and a link to the prefix they follow, and both
 * are compared, so a key collision costs a miss, never another prompt's KV.
 * Released blocks that hold a cached prefix stay resident (evictable, least recently used first)
 * until their space is needed.
 *
 * With a model whose every layer has a sliding window, a sequence's leading blocks that no
 * window reaches any more are released while it runs (`drop`): their table entries become
 * {@linkcode DROPPED}, and each block goes back to the pool by reference count (a prefix-cached
 * one stays cached, evictable, and publishes `BlockRemoved` when its space is taken).
 */
import type { KvCacheEvent } from "../../contract/kv_events.ts";
import { type BlockKey, blockKey, publishedHash } from "../block_hash.ts";
import type { RouterHash } from "../router_hash.ts";

/** Size and event hook of a {@linkcode BlockManager}. */
export interface BlockManagerOptions {
  /** Blocks in the KV cache. */
  numBlocks: number;
  /** Tokens per block. */
  blockSize: number;
  /** Hears `BlockStored` / `BlockRemoved` events as prefix blocks are cached and evicted. */
  onEvent?: (event: KvCacheEvent) => void;
  /**
   * The key function (default {@linkcode blockKey}: SHA-256). Tests pass a colliding one to
   * show that a hit checks the tokens and the prefix, not only the key.
   */
  blockKey?: (parent: BlockKey | null, tokens: readonly number[]) => BlockKey;
  /**
   * Reuse cached prefixes (default true). Off for a model with recurrent layers, whose state at
   * a block boundary no block holds: no block is then looked up, cached or published.
   */
  prefixCaching?: boolean;
  /**
   * The hash events publish for a block (`router_hash.ts`: Dynamo's router's XXH3 chain, which
   * engines pass). Without it, events carry the low 64 bits of the SHA-256 key instead.
   */
  routerHash?: RouterHash;
}

/**
 * A prefix as a chain of full blocks: a block's tokens after the prefix `parent`. A cached block
 * holds one; a hit compares the tokens and the chain, the key only finds the candidate.
 */
export interface BlockPrefix {
  /** The block's key: SHA-256 over the parent's key and `tokens`. */
  readonly key: BlockKey;
  /** The block's tokens. */
  readonly tokens: readonly number[];
  /** The blocks before it; `null` for a sequence's first block. */
  readonly parent: BlockPrefix | null;
  /** The hash KV events publish for it (see {@linkcode BlockManagerOptions.routerHash}). */
  readonly hash: bigint;
}

interface Block {
  id: number;
  refs: number;
  /** The prefix the block holds, while it is in the prefix cache. */
  prefix: BlockPrefix | undefined;
  /** Last release time, for LRU eviction of cached free blocks. */
  lastUse: number;
}

const sameTokens = (a: readonly number[], b: readonly number[]) =>
  a.length === b.length && a.every((t, i) => t === b[i]);

/** Whether two chains hold the same tokens: the same objects, or equal block by block. */
function samePrefix(a: BlockPrefix | null, b: BlockPrefix | null): boolean {
  for (; a !== b; a = a.parent, b = b.parent) {
    if (a === null || b === null || !sameTokens(a.tokens, b.tokens)) return false;
  }
  return true;
}

/** The table entry of a block a sequence released because no layer's window reaches it. */
export const DROPPED = -1;

/** A sequence's blocks, in order, and the prefixes of its full, committed blocks. */
export interface SeqBlocks {
  /** Ids of the sequence's blocks, in token order ({@linkcode DROPPED} for released ones). */
  blocks: number[];
  /** How many leading entries of `blocks` are {@linkcode DROPPED}. */
  dropped: number;
  /** The prefix up to each full block committed so far (each the next one's parent). */
  prefixes: BlockPrefix[];
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
  /** Blocks that hold a cached prefix (referenced or evictable), by key. */
  readonly #cached = new Map<BlockKey, Block>();
  readonly #onEvent: ((e: KvCacheEvent) => void) | undefined;
  readonly #key: (parent: BlockKey | null, tokens: readonly number[]) => BlockKey;
  readonly #routerHash: RouterHash | undefined;
  #clock = 0;
  /** Full prompt blocks looked up in the prefix cache so far. */
  queries = 0;
  /** Of those lookups, the ones found cached. */
  hits = 0;
  /**
   * Lookups and commits that found their key held by other tokens or another prefix, and so
   * were not shared: a key collision, not expected with SHA-256 keys.
   */
  mismatches = 0;

  /** A cache with every block free. */
  /** Whether cached prefixes are reused ({@linkcode BlockManagerOptions.prefixCaching}). */
  readonly prefixCaching: boolean;

  constructor(options: BlockManagerOptions) {
    this.numBlocks = options.numBlocks;
    this.blockSize = options.blockSize;
    this.#onEvent = options.onEvent;
    this.#key = options.blockKey ?? blockKey;
    this.#routerHash = options.routerHash;
    this.prefixCaching = options.prefixCaching ?? true;
    this.#blocks = Array.from(
      { length: this.numBlocks },
      (_, id) => ({ id, refs: 0, prefix: undefined, lastUse: 0 }),
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

  /** The published hashes of the blocks in the prefix cache now (referenced or evictable). */
  cachedHashes(): bigint[] {
    return [...this.#cached.values()].map((b) => b.prefix!.hash);
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
    const { key, hash } = victim.prefix!;
    this.#cached.delete(key);
    this.#onEvent?.({ type: "BlockRemoved", block_hashes: [hash] });
    victim.prefix = undefined;
    return victim;
  }

  /** The cached block under `key` if it holds exactly `tokens` after `parent`'s tokens. */
  #match(key: BlockKey, parent: BlockPrefix | null, tokens: readonly number[]): Block | undefined {
    const b = this.#cached.get(key);
    if (b === undefined) return undefined;
    const p = b.prefix!;
    if (sameTokens(p.tokens, tokens) && samePrefix(p.parent, parent)) return b;
    this.mismatches++;
    return undefined;
  }

  /**
   * Blocks for a prompt: cached full blocks of its prefix are shared, the rest allocated.
   * Returns undefined (allocating nothing) when there is not room for `tokens + extra` tokens.
   * `cachedTokens` is how many leading tokens need no prefill. `reserve`: allocate at most that
   * many blocks past the cached ones (and no more than the cache holds), the rest growing with
   * `ensure` as the sequence is computed (a windowed model's sequences, which `drop` as they go).
   */
  allocate(
    tokens: readonly number[],
    extra = 0,
    reserve = Infinity,
  ): { seq: SeqBlocks; cachedTokens: number } | undefined {
    const bs = this.blockSize;
    const hits: Block[] = [];
    const prefixes: BlockPrefix[] = [];
    // Keep at least one prompt token to compute: a fully cached prompt still needs its logits.
    const fullBlocks = this.prefixCaching ? Math.floor(Math.max(0, tokens.length - 1) / bs) : 0;
    for (let i = 0; i < fullBlocks; i++) {
      const parent = prefixes[i - 1] ?? null;
      const blockTokens = tokens.slice(i * bs, (i + 1) * bs);
      const b = this.#match(this.#key(parent?.key ?? null, blockTokens), parent, blockTokens);
      if (b === undefined) break;
      hits.push(b);
      prefixes.push(b.prefix!);
    }
    const whole = Math.ceil((tokens.length + extra) / bs);
    const needed = reserve === Infinity
      ? whole
      : Math.min(whole, hits.length + reserve, Math.max(hits.length, this.numBlocks));
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
    return { seq: { blocks, dropped: 0, prefixes }, cachedTokens: hits.length * bs };
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
    if (!this.prefixCaching) return;
    const bs = this.blockSize;
    while ((seq.prefixes.length + 1) * bs <= computed) {
      const i = seq.prefixes.length;
      const parent = seq.prefixes[i - 1] ?? null;
      const blockTokens = tokens.slice(i * bs, (i + 1) * bs);
      const key = this.#key(parent?.key ?? null, blockTokens);
      const prefix: BlockPrefix = {
        key,
        tokens: blockTokens,
        parent,
        hash: this.#routerHash?.(parent?.hash ?? null, blockTokens) ?? publishedHash(key),
      };
      if (seq.blocks[i] === DROPPED) { // released before its tokens were known: not cached
        seq.prefixes.push(prefix);
        continue;
      }
      const b = this.#blocks[seq.blocks[i]!]!;
      if (b.prefix !== undefined) { // shared: a prefix hit
        seq.prefixes.push(b.prefix);
        continue;
      }
      if (this.#cached.has(key)) {
        // An equal block was cached meanwhile: later blocks chain on its prefix. Other tokens
        // under the same key (a collision): this block stays out of the cache.
        seq.prefixes.push(this.#match(key, parent, blockTokens)?.prefix ?? prefix);
        continue;
      }
      seq.prefixes.push(b.prefix = prefix);
      this.#cached.set(key, b);
      this.#onEvent?.({
        type: "BlockStored",
        block_hashes: [prefix.hash],
        parent_block_hash: parent?.hash ?? null,
        token_ids: blockTokens,
        block_size: bs,
      });
    }
  }

  /** Drop one reference to block `id`; true when it was the last (the block is free or evictable). */
  #unref(id: number): boolean {
    const b = this.#blocks[id]!;
    if (b.refs === 0) return false;
    b.refs--;
    if (b.refs > 0) return false;
    b.lastUse = this.#clock;
    if (b.prefix === undefined) this.#free.push(id);
    return true;
  }

  /** Drop a sequence's references. Blocks in the prefix cache stay cached; the others are freed. */
  release(seq: SeqBlocks): void {
    this.#clock++;
    for (const id of seq.blocks) if (id !== DROPPED) this.#unref(id);
    seq.blocks = [];
    seq.dropped = 0;
    seq.prefixes = [];
  }

  /**
   * Release the leading blocks of `seq` whose every position is before `from`: with a sliding
   * window w on every layer, computing position q reads keys q - w + 1..q only, so `from` is
   * the next position to compute, plus 1, minus w. Their entries become {@linkcode DROPPED}
   * (later positions keep their indices); each block loses this sequence's reference, so a
   * shared or cached one is not freed while another sequence holds it, and a cached one stays
   * cached. Returns the ids of the blocks whose last reference this was.
   */
  drop(seq: SeqBlocks, from: number): number[] {
    const end = Math.min(Math.floor(from / this.blockSize), seq.blocks.length);
    const released: number[] = [];
    if (seq.dropped >= end) return released;
    this.#clock++;
    for (; seq.dropped < end; seq.dropped++) {
      const id = seq.blocks[seq.dropped]!;
      seq.blocks[seq.dropped] = DROPPED;
      if (this.#unref(id)) released.push(id);
    }
    return released;
  }

  /**
   * Evict every cached block no sequence holds (Dynamo's `clear_kv_blocks` control), publishing
   * one `BlockRemoved` for them; blocks running sequences hold stay cached. Returns how many.
   */
  evictIdle(): number {
    const removed: bigint[] = [];
    for (const [key, b] of this.#cached) {
      if (b.refs > 0) continue;
      this.#cached.delete(key);
      removed.push(b.prefix!.hash);
      b.prefix = undefined;
      this.#free.push(b.id);
    }
    if (removed.length > 0) this.#onEvent?.({ type: "BlockRemoved", block_hashes: removed });
    return removed.length;
  }

  /** Forget every block (cleanup). */
  clear(): void {
    for (const b of this.#blocks) {
      b.refs = 0;
      b.prefix = undefined;
    }
    this.#cached.clear();
    this.#free.length = 0;
    for (let i = this.numBlocks - 1; i >= 0; i--) this.#free.push(i);
    this.#onEvent?.({ type: "AllBlocksCleared" });
  }
}
