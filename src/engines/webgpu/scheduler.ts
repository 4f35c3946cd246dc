/**
 * Continuous batching: each step takes one token from every running sequence that has finished
 * its prompt, then fills the rest of the token budget with prompt chunks (so a long prompt is
 * prefilled over several steps without stalling the others). Waiting requests join in arrival
 * order when their blocks fit; a sequence that cannot grow is preempted (its blocks released,
 * recomputed later).
 *
 * Nothing waits for room that can never come: a sequence that the whole cache could not hold
 * with one more token is never put back in the queue (it ends with `length` instead of being
 * preempted), and a queued one that could never fit is ended rather than left at the head. The
 * engine refuses such prompts and caps `max_tokens` at the cache (`sequenceLimit`), so these
 * are guards; a head that can fit once running sequences finish keeps its place (first come,
 * first served: later, smaller requests do not overtake it).
 */
import { EngineError } from "../../contract/errors.ts";
import { kvMisfit } from "../../contract/kv_capacity.ts";
import type { StepBatch } from "../../model/forward.ts";
import type { BlockManager } from "./block_manager.ts";
import type { Sequence } from "./sequence.ts";

export interface SchedulerLimits {
  maxNumSeqs: number;
  maxNumBatchedTokens: number;
}

/** Where the engine keeps sequences' tokens on the GPU (see `token_store.ts`). */
export interface TokenSlots {
  /** A running sequence's place in the store; its known tokens are written there. */
  admit(seq: Sequence): void;
  /** The sequence left the running set (finished, preempted or removed). */
  evict(seq: Sequence): void;
  /** The store index of token `pos` of `seq`. */
  index(seq: Sequence, pos: number): number;
}

export interface Step {
  batch: StepBatch;
  /** Sequences that get a sampled token this step, in logit-row order. */
  sampled: Sequence[];
  /** Sequences in the batch and how many tokens each contributes (to advance `computed`). */
  parts: { seq: Sequence; count: number }[];
}

export class Scheduler {
  readonly waiting: Sequence[] = [];
  readonly running: Sequence[] = [];

  /** How many tokens a sequence may have sampled but not yet read back (steps in flight). */
  maxAhead = 1;
  /** Sequences preempted so far. */
  preemptions = 0;
  /** Sequences ended with `length` because the whole cache could not hold them. */
  truncations = 0;

  constructor(
    readonly blocks: BlockManager,
    readonly limits: SchedulerLimits,
    readonly slots: TokenSlots,
  ) {}

  get idle(): boolean {
    return this.waiting.length === 0 && this.running.length === 0;
  }

  /** Whether `seq` (its known tokens and one more) fits the cache once nothing else runs. */
  fitsAlone(seq: Sequence): boolean {
    return Math.ceil((seq.tokens.length + 1) / this.blocks.blockSize) <= this.blocks.numBlocks;
  }

  #admit(): void {
    while (this.waiting.length > 0 && this.running.length < this.limits.maxNumSeqs) {
      const seq = this.waiting[0]!;
      if (!this.fitsAlone(seq)) {
        this.waiting.shift();
        if (seq.generated > 0) this.#truncate(seq);
        else {
          const why = kvMisfit({ ...seq.request, stop_conditions: {} }, this.blocks)!.message;
          seq.fail(EngineError.invalidArgument(`request.token_ids: ${why}`));
        }
        continue;
      }
      const got = this.blocks.allocate(seq.tokens, 1);
      if (got === undefined) break;
      this.waiting.shift();
      seq.blocks = got.seq;
      seq.computed = got.cachedTokens;
      this.running.push(seq);
      this.slots.admit(seq);
    }
  }

  /**
   * Give a sequence back to the waiting queue, dropping its KV (recomputed when it returns) and
   * the tokens still in flight for it (sampled again, with the same draws, when it returns).
   */
  preempt(seq: Sequence): void {
    if (seq.blocks) this.blocks.release(seq.blocks);
    seq.blocks = undefined;
    seq.computed = 0;
    seq.ahead = 0;
    seq.epoch++;
    this.preemptions++;
    this.slots.evict(seq);
    this.running.splice(this.running.indexOf(seq), 1);
    this.waiting.unshift(seq);
  }

  /** Make room by taking `seq` out: preempted when it can come back, else ended (`length`). */
  #evict(seq: Sequence): void {
    if (this.fitsAlone(seq)) this.preempt(seq);
    else this.#truncate(seq);
  }

  #truncate(seq: Sequence): void {
    seq.truncate();
    this.truncations++;
    this.remove(seq);
  }

  /** Take a sequence out (finished, cancelled or failed) and free its blocks. */
  remove(seq: Sequence): void {
    if (seq.blocks) this.blocks.release(seq.blocks);
    seq.blocks = undefined;
    const i = this.running.indexOf(seq);
    if (i >= 0) {
      this.running.splice(i, 1);
      this.slots.evict(seq);
    }
    const w = this.waiting.indexOf(seq);
    if (w >= 0) this.waiting.splice(w, 1);
  }

  /** The next step's batch, or undefined when nothing can run until a request arrives or ends. */
  next(): Step | undefined {
    for (;;) {
      const evicted = this.preemptions + this.truncations;
      const step = this.#build();
      // A step whose every decoding sequence was evicted is empty, but the blocks it freed may
      // let a waiting sequence in now (an admitted one has room to prefill): try once more.
      if (step !== undefined || this.preemptions + this.truncations === evicted) return step;
    }
  }

  #build(): Step | undefined {
    this.#admit();
    let budget = this.limits.maxNumBatchedTokens;
    const parts: { seq: Sequence; count: number }[] = [];
    // Tokens to compute, counting those sampled on the GPU and not yet read back.
    const pending = (seq: Sequence) => seq.length - seq.computed;
    const ready = (seq: Sequence) => seq.canSample(this.maxAhead);
    // Decode first: one token each, growing blocks as needed (evicting the newest on failure).
    for (const seq of [...this.running]) {
      if (pending(seq) !== 1 || !ready(seq) || budget === 0 || !this.running.includes(seq)) {
        continue;
      }
      while (!this.blocks.ensure(seq.blocks!, seq.computed + 1)) {
        const victim = this.running[this.running.length - 1]!;
        this.#evict(victim);
        if (victim === seq) break;
      }
      if (!this.running.includes(seq)) continue;
      parts.push({ seq, count: 1 });
      budget--;
    }
    for (const seq of this.running) {
      if (pending(seq) <= 1 || budget === 0) continue;
      const count = Math.min(pending(seq), budget);
      // The chunk that ends the prompt samples; it waits while the sequence may not.
      if (seq.computed + count === seq.length && !ready(seq)) continue;
      parts.push({ seq, count });
      budget -= count;
    }
    if (parts.length === 0) return undefined;
    const tokens: number[] = [],
      positions: number[] = [],
      slots: number[] = [],
      tableOffsets: number[] = [];
    const blockTable: number[] = [];
    const logitRows: number[] = [];
    const sampled: Sequence[] = [];
    const bs = this.blocks.blockSize;
    for (const { seq, count } of parts) {
      const offset = blockTable.length;
      blockTable.push(...seq.blocks!.blocks);
      for (let i = 0; i < count; i++) {
        const pos = seq.computed + i;
        tokens.push(this.slots.index(seq, pos));
        positions.push(pos);
        slots.push(seq.blocks!.blocks[Math.floor(pos / bs)]! * bs + (pos % bs));
        tableOffsets.push(offset);
      }
      if (seq.computed + count === seq.length) {
        logitRows.push(tokens.length - 1);
        sampled.push(seq);
      }
    }
    return {
      batch: { tokens, positions, slots, tableOffsets, blockTable, logitRows },
      sampled,
      parts,
    };
  }
}
