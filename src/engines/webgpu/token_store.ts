/**
 * Every running sequence's tokens on the GPU, one slot of `context` ids each. The forward pass
 * gathers a step's input ids from here and the sampler reads penalty histories from here; the
 * append kernel writes each sampled token into its slot, so the next step can run before the
 * CPU has read the token back.
 */
import { storageBuffer } from "../../gpu/buffers.ts";
import { type Dispatch, encodeDispatches } from "../../gpu/dispatch.ts";
import type { KernelDispatch } from "../../gpu/kernels/kernel.ts";
import { prepareAppend } from "../../gpu/kernels/tokens.ts";
import type { TokenSlots } from "./scheduler.ts";
import type { Sequence } from "../sequence.ts";

const NOWHERE = 0xffffffff;

export class TokenStore implements TokenSlots {
  readonly buffer: GPUBuffer;
  readonly #at: GPUBuffer;
  readonly #free: number[] = [];
  readonly #appends = new Map<number, KernelDispatch>();

  #result: GPUBuffer | undefined;

  /** `rows`: the most sampled rows a step appends (default one per slot). */
  constructor(
    readonly device: GPUDevice,
    readonly slots: number,
    readonly context: number,
    rows = slots,
  ) {
    this.buffer = storageBuffer(device, "engine:token_store", slots * context * 4);
    this.#at = storageBuffer(device, "engine:append_at", rows * 4);
    for (let i = slots - 1; i >= 0; i--) this.#free.push(i);
  }

  admit(seq: Sequence): void {
    const slot = this.#free.pop();
    if (slot === undefined) throw new Error("token store: no free slot (more running than slots)");
    seq.slot = slot;
    // Queue-ordered after every step already submitted, so a previous owner's in-flight appends
    // land first and are overwritten here.
    this.device.queue.writeBuffer(
      this.buffer,
      slot * this.context * 4,
      Uint32Array.from(seq.tokens),
    );
    seq.unstored = 0;
  }

  /**
   * Write the tokens the CPU appended to `seq` (forced by its guide) into its slot, queue-ordered
   * before the step that reads them; nothing when it has none or no slot (admit writes them).
   */
  sync(seq: Sequence): void {
    if (seq.unstored === 0 || seq.slot === undefined) return;
    const from = seq.tokens.length - seq.unstored;
    this.device.queue.writeBuffer(
      this.buffer,
      this.index(seq, from) * 4,
      Uint32Array.from(seq.tokens.slice(from)),
    );
    seq.unstored = 0;
  }

  evict(seq: Sequence): void {
    if (seq.slot === undefined) return;
    this.#free.push(seq.slot);
    seq.slot = undefined;
  }

  /** Where `seq`'s tokens start in the store. */
  start(seq: Sequence): number {
    if (seq.slot === undefined) throw new Error("token store: sequence has no slot");
    return seq.slot * this.context;
  }

  index(seq: Sequence, pos: number): number {
    return this.start(seq) + pos;
  }

  /**
   * Write the tokens drafted after `seq`'s known tokens (all read back) where the step that
   * verifies them reads its inputs; its appends then overwrite them with the tokens drawn.
   */
  writeDraft(seq: Sequence, draft: readonly number[]): void {
    this.device.queue.writeBuffer(
      this.buffer,
      this.index(seq, seq.tokens.length) * 4,
      Uint32Array.from(draft),
    );
  }

  /**
   * Record the append of this step's sampled tokens: row `i` of `result` (the sampler's token id
   * and logprob bits per row; always the same buffer) goes after `rows[i].seq`'s tokens, past
   * the `offset` tokens drafted before it.
   */
  async encodeAppend(
    encoder: GPUCommandEncoder,
    rows: readonly { seq: Sequence; offset: number }[],
    result: GPUBuffer,
  ): Promise<void> {
    const at = Uint32Array.from(rows, ({ seq, offset }) => {
      const pos = seq.length + offset;
      return pos < this.context ? this.index(seq, pos) : NOWHERE;
    });
    this.device.queue.writeBuffer(this.#at, 0, at);
    encodeDispatches(encoder, [await this.#append(result, rows.length)], "engine:append");
  }

  /**
   * Build the append kernel's pipeline (one for any number of sequences) before the first step,
   * reading `result` (the sampler's); returns its dispatch for one sequence.
   */
  async warm(result: GPUBuffer): Promise<Dispatch[]> {
    return [await this.#append(result, 1)];
  }

  async #append(result: GPUBuffer, count: number): Promise<KernelDispatch> {
    if (this.#result !== undefined && this.#result !== result) {
      throw new Error("token store: appends read one result buffer");
    }
    this.#result = result;
    let d = this.#appends.get(count);
    if (d === undefined) {
      d = await prepareAppend(this.device, {
        result,
        at: this.#at,
        store: this.buffer,
        count,
      }, `engine:append:${count}`);
      this.#appends.set(count, d);
    }
    return d;
  }

  destroy(): void {
    this.buffer.destroy();
    this.#at.destroy();
    for (const d of this.#appends.values()) d.uniform.destroy();
    this.#appends.clear();
  }
}
