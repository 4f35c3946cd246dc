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
 *
 * With a sliding window on every layer (`kvWindow` w), computing position q reads keys
 * q - w + 1..q only: before each step, a sequence's leading blocks wholly before its next
 * position's window are released (`BlockManager.drop`), so a sequence holds at most
 * `windowBlocks` = ceil((w + blockSize - 1) / blockSize) blocks to decode, whatever its length.
 * Such a sequence is admitted with at most that many new blocks and grows as it is computed
 * (a prompt chunk that finds no block waits, or takes them from the newest sequences, as decode
 * does), so a preempted sequence longer than the cache can come back, and one may run to the
 * context length when `windowBlocks` fit the cache.
 *
 * A sequence that speculates (a `Drafter` says so) decodes only once its tokens are read back;
 * its decode then carries the tokens drafted after it (if any were found and their blocks are
 * free: a draft never evicts anyone), each with a logit row. Only the decode token counts as
 * computed when the step is built; the engine adds the accepted drafts when it reads them back.
 * While its drafter is still making its draft (a draft model's), it sits the steps out.
 */
import { EngineError } from "../../contract/errors.ts";
import { kvMisfit } from "../../contract/kv_capacity.ts";
import type { StepBatch } from "../../runtime/forward.ts";
import { type BlockManager, DROPPED } from "./block_manager.ts";
import type { Sequence } from "../sequence.ts";
import type { Drafter } from "../speculation.ts";

export interface SchedulerLimits {
  maxNumSeqs: number;
  maxNumBatchedTokens: number;
  /** The window every layer keeps to (`kvWindow`); absent or 0: nothing is dropped. */
  kvWindow?: number;
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

/** One sequence's share of a step. */
export interface StepPart {
  seq: Sequence;
  /** Tokens it contributes that count as computed once the step is submitted. */
  count: number;
  /** Tokens drafted after its decode token, verified in this step (logit row each). */
  draft?: number[];
}

export interface Step {
  batch: StepBatch;
  /** Sequences that get a sampled token this step, in logit-row order. */
  sampled: Sequence[];
  /** The logit rows: whose, and after how many of its drafted tokens (0: its next token). */
  rows: { seq: Sequence; offset: number }[];
  /** Sequences in the batch and what each contributes. */
  parts: StepPart[];
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
  /** Blocks released because no layer's window reaches them any more. */
  droppedBlocks = 0;

  constructor(
    readonly blocks: BlockManager,
    readonly limits: SchedulerLimits,
    readonly slots: TokenSlots,
    readonly drafter?: Drafter,
  ) {}

  get idle(): boolean {
    return this.waiting.length === 0 && this.running.length === 0;
  }

  /** The window every layer keeps to (0: none). */
  get window(): number {
    return this.limits.kvWindow ?? 0;
  }

  /** Blocks a windowed sequence needs to compute one more token (Infinity without a window). */
  get windowBlocks(): number {
    const w = this.window, bs = this.blocks.blockSize;
    return w > 0 ? Math.ceil((w + bs - 1) / bs) : Infinity;
  }

  /**
   * The most tokens (prompt and output) one sequence may reach: the context length, or the
   * whole cache when that is smaller and a sequence keeps every block (no window, or one
   * whose `windowBlocks` the cache cannot hold).
   */
  sequenceLimit(context: number): number {
    if (this.windowBlocks <= this.blocks.numBlocks) return context;
    return Math.min(context, this.blocks.numBlocks * this.blocks.blockSize);
  }

  /** Whether `seq` (its known tokens and one more) fits the cache once nothing else runs. */
  fitsAlone(seq: Sequence): boolean {
    const whole = Math.ceil((seq.tokens.length + 1) / this.blocks.blockSize);
    return Math.min(whole, this.windowBlocks) <= this.blocks.numBlocks;
  }

  /** Release `seq`'s leading blocks that the window of its next position no longer reaches. */
  #drop(seq: Sequence): void {
    if (this.window === 0 || !seq.blocks) return;
    this.droppedBlocks += this.blocks.drop(seq.blocks, seq.computed + 1 - this.window).length;
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
      const got = this.blocks.allocate(seq.tokens, 1, this.windowBlocks);
      if (got === undefined) break;
      this.waiting.shift();
      seq.blocks = got.seq;
      seq.computed = got.cachedTokens;
      this.#drop(seq);
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

  /**
   * Grow `seq` to `length` tokens, evicting the newest running sequences not in `keep` while no
   * block is free; false when it could not (it may have been evicted itself).
   */
  #grow(seq: Sequence, length: number, keep: ReadonlySet<Sequence>): boolean {
    while (!this.blocks.ensure(seq.blocks!, length)) {
      const victim = this.running.findLast((s) => !keep.has(s));
      if (victim === undefined) return false;
      this.#evict(victim);
      if (victim === seq) return false;
    }
    return true;
  }

  /**
   * Tokens drafted after `seq`'s decode token: at most `budget`, and what its output may still
   * hold after that token; undefined while the drafter is still making them (it waits).
   */
  #draft(seq: Sequence, budget: number): number[] | undefined {
    const room = Math.min(budget, seq.maxTokens - seq.generated - 1);
    if (room <= 0) return [];
    return this.drafter!.propose(seq, room)?.slice(0, room);
  }

  #build(): Step | undefined {
    for (const seq of this.running) this.#drop(seq);
    this.#admit();
    let budget = this.limits.maxNumBatchedTokens;
    const parts: StepPart[] = [];
    // Tokens to compute, counting those sampled on the GPU and not yet read back.
    const pending = (seq: Sequence) => seq.length - seq.computed;
    const speculates = (seq: Sequence) => this.drafter?.speculates(seq) === true;
    const ready = (seq: Sequence) => seq.canSample(speculates(seq) ? 1 : this.maxAhead);
    // Decode first: one token each, growing blocks as needed (evicting the newest on failure).
    for (const seq of [...this.running]) {
      if (pending(seq) !== 1 || !ready(seq) || budget === 0 || !this.running.includes(seq)) {
        continue;
      }
      let draft = speculates(seq) ? this.#draft(seq, budget - 1) : [];
      if (draft === undefined) continue; // its draft is being made
      if (!this.#grow(seq, seq.computed + 1, new Set())) continue;
      budget--;
      // A draft takes only blocks that are free: it never evicts anyone.
      if (!this.blocks.ensure(seq.blocks!, seq.computed + 1 + draft.length)) draft = [];
      parts.push(draft.length > 0 ? { seq, count: 1, draft } : { seq, count: 1 });
      budget -= draft.length;
    }
    const bs = this.blocks.blockSize;
    for (const seq of [...this.running]) {
      if (pending(seq) <= 1 || budget === 0 || !this.running.includes(seq)) continue;
      let count = Math.min(pending(seq), budget);
      // The chunk that ends the prompt samples; it waits while the sequence may not.
      if (seq.computed + count === seq.length && !ready(seq)) continue;
      // A windowed sequence's blocks come as it is computed: a chunk takes what is free, and
      // one that finds nothing takes a block from the newest sequences not in this step.
      if (!this.blocks.ensure(seq.blocks!, seq.computed + count)) {
        const keep = new Set(parts.map((p) => p.seq));
        if (!this.#grow(seq, seq.computed + 1, keep)) continue;
        count = Math.min(count, seq.blocks!.blocks.length * bs - seq.computed);
      }
      parts.push({ seq, count });
      budget -= count;
    }
    if (parts.length === 0) return undefined;
    const tokens: number[] = [],
      positions: number[] = [],
      slots: number[] = [],
      stateSlots: number[] = [],
      tableOffsets: number[] = [];
    const blockTable: number[] = [];
    const logitRows: number[] = [];
    const sampled: Sequence[] = [];
    const rows: Step["rows"] = [];
    for (const { seq, count, draft } of parts) {
      const offset = blockTable.length;
      // Dropped entries are never read (attention starts at the window); they name the
      // sequence's own first live block, so the table holds only ids this sequence owns.
      const { blocks, dropped } = seq.blocks!;
      blockTable.push(...blocks.map((id) => id === DROPPED ? blocks[dropped]! : id));
      const drafted = draft?.length ?? 0;
      for (let i = 0; i < count + drafted; i++) {
        const pos = seq.computed + i;
        tokens.push(this.slots.index(seq, pos));
        positions.push(pos);
        slots.push(seq.blocks!.blocks[Math.floor(pos / bs)]! * bs + (pos % bs));
        stateSlots.push(seq.slot ?? 0);
        tableOffsets.push(offset);
        if (i >= count - 1 && seq.computed + count === seq.length) {
          logitRows.push(tokens.length - 1);
          rows.push({ seq, offset: i - (count - 1) });
        }
      }
      if (seq.computed + count === seq.length) sampled.push(seq);
    }
    return {
      batch: { tokens, positions, slots, stateSlots, tableOffsets, blockTable, logitRows },
      sampled,
      rows,
      parts,
    };
  }
}
