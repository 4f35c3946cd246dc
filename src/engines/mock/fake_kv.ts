/**
 * The mock engine's pretend KV cache: it counts blocks per request, keys full prompt blocks by
 * the WebGPU engine's SHA-256 key chain, publishes Dynamo-shaped KV events (with the same
 * hashes) and feeds the component gauges. It also admits requests as a real cache would, only
 * simpler: each reserves the blocks of its prompt and its most output before it starts (first
 * come, first served), so the blocks in use never pass `totalBlocks` and a request never has to
 * be preempted.
 */
import type { KvEventPublisher } from "../../contract/kv_events.ts";
import type { ComponentGauges } from "../../contract/metrics/engine_metrics.ts";
import { type BlockKey, blockKeys, publishedHash } from "../block_hash.ts";

export class FakeKvCache {
  publisher: KvEventPublisher | undefined;
  gauges: ComponentGauges | undefined;
  #refs = new Map<BlockKey, number>();
  #used = 0;
  #queried = 0;
  #hits = 0;
  /** Bumped by clear(): handles from before a clear release nothing. */
  #epoch = 0;
  /** Blocks reserved by the requests admitted. */
  #reserved = 0;
  /** Requests waiting for their reservation, in arrival order. */
  #queue: { blocks: number; grant: () => void }[] = [];

  constructor(readonly blockSize: number, readonly totalBlocks: number) {}

  get usedBlocks(): number {
    return this.#used;
  }

  /**
   * Wait until `blocks` (at most `totalBlocks`) fit beside the requests admitted, in arrival
   * order; resolves with the function that gives them back, or undefined when `signal` aborts
   * first.
   */
  reserve(blocks: number, signal: AbortSignal): Promise<(() => void) | undefined> {
    const epoch = this.#epoch;
    return new Promise((resolve) => {
      if (signal.aborted) return resolve(undefined);
      const onAbort = () => {
        const i = this.#queue.indexOf(entry);
        if (i < 0) return;
        this.#queue.splice(i, 1);
        this.#admit();
        resolve(undefined);
      };
      const entry = {
        blocks,
        grant: () => {
          signal.removeEventListener("abort", onAbort);
          this.#reserved += blocks;
          let given = false;
          resolve(() => {
            if (given || epoch !== this.#epoch) return;
            given = true;
            this.#reserved -= blocks;
            this.#admit();
          });
        },
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#queue.push(entry);
      this.#admit();
    });
  }

  #admit(): void {
    while (this.#queue.length > 0 && this.#reserved + this.#queue[0]!.blocks <= this.totalBlocks) {
      this.#queue.shift()!.grant();
    }
  }

  /**
   * Take the blocks of a prompt. Full prompt blocks are shared by hash; the partial block and
   * the generated tokens' blocks are the request's own. `update` follows generation; `release`
   * returns everything.
   */
  acquire(prompt: readonly number[]): { update(generated: number): void; release(): void } {
    const keys = blockKeys(prompt, this.blockSize);
    keys.forEach((h, i) => {
      this.#queried++;
      const refs = this.#refs.get(h) ?? 0;
      if (refs > 0) this.#hits++;
      else {
        this.#used++;
        this.publisher?.publish({
          type: "BlockStored",
          block_hashes: [publishedHash(h)],
          parent_block_hash: i === 0 ? null : publishedHash(keys[i - 1]!),
          token_ids: prompt.slice(i * this.blockSize, (i + 1) * this.blockSize),
          block_size: this.blockSize,
        });
      }
      this.#refs.set(h, refs + 1);
    });
    let own = 0;
    const epoch = this.#epoch;
    const update = (generated: number) => {
      if (epoch !== this.#epoch) return;
      const next = Math.ceil((prompt.length + generated) / this.blockSize) - keys.length;
      this.#used += next - own;
      own = next;
      this.#report();
    };
    update(0);
    let released = false;
    return {
      update,
      release: () => {
        if (released || epoch !== this.#epoch) return;
        released = true;
        this.#used -= own;
        const removed: bigint[] = [];
        for (const h of keys) {
          const refs = (this.#refs.get(h) ?? 1) - 1;
          if (refs > 0) this.#refs.set(h, refs);
          else if (this.#refs.delete(h)) {
            removed.push(publishedHash(h));
            this.#used--;
          }
        }
        if (removed.length > 0) {
          this.publisher?.publish({ type: "BlockRemoved", block_hashes: removed });
        }
        this.#report();
      },
    };
  }

  clear(): void {
    if (this.#refs.size > 0) this.publisher?.publish({ type: "AllBlocksCleared" });
    this.#refs.clear();
    this.#used = 0;
    this.#reserved = 0;
    this.#epoch++;
    this.#report();
  }

  report(): void {
    this.#report();
  }

  #report(): void {
    const g = this.gauges;
    if (g === undefined) return;
    g.setTotalBlocks(this.totalBlocks);
    g.setGpuCacheUsagePercent(this.#used / this.totalBlocks);
    g.setKvCacheHitRate(this.#queried === 0 ? undefined : this.#hits / this.#queried);
  }
}
