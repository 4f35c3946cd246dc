/**
 * Guided decoding's per-sequence token bitmask on the GPU (`shaders/lib/token_mask.wgsl`): the
 * rows of a batch, uploaded before the sampler runs, and the `token_mask` pass that applies them
 * to the logits in place when the sampler does not read them itself (its `fused` path).
 */
import { EngineError } from "../../contract/errors.ts";
import { storageBuffer } from "../buffers.ts";
import { maskWords } from "../token_mask_bits.ts";
import { grid256, type KernelDispatch, prepareKernel } from "./kernel.ts";

/**
 * Where the bitmask is applied: `fused` inside the sampling kernel as it reads each logit, or
 * `pass`: a kernel of its own before it, which writes -inf into the logits (in place).
 */
export type TokenMaskPath = "fused" | "pass";

/** The bitmask rows of up to `maxSeqs` sequences over `vocab` tokens; owns its buffer. */
export class TokenMaskRows {
  /** u32 words per row: `ceil(vocab / 32)`. */
  readonly words: number;
  /** `[maxSeqs, words]` u32: row s is the batch's s-th sampled sequence. */
  readonly buffer: GPUBuffer;
  readonly #ones: Uint32Array;

  /** Rows for up to `maxSeqs` sequences over `vocab` tokens, on `device`. */
  constructor(readonly device: GPUDevice, readonly maxSeqs: number, readonly vocab: number) {
    this.words = maskWords(vocab);
    this.buffer = storageBuffer(device, "sampler:token_mask", maxSeqs * this.words * 4);
    this.#ones = new Uint32Array(this.words).fill(0xffffffff);
  }

  /**
   * Upload a batch's rows (all ones for a sequence without a mask) and return true; when no
   * sequence has one, write nothing and return false (the sampler then reads no row). A mask of
   * the wrong length is an `InvalidArgument`.
   */
  write(masks: readonly (Uint32Array | undefined)[]): boolean {
    if (masks.every((m) => m === undefined)) return false;
    const rows = new Uint32Array(masks.length * this.words);
    masks.forEach((m, i) => {
      if (m !== undefined && m.length !== this.words) {
        throw EngineError.invalidArgument(
          `token mask: ${m.length} words, ${this.words} expected (vocab ${this.vocab})`,
        );
      }
      rows.set(m ?? this.#ones, i * this.words);
    });
    this.device.queue.writeBuffer(this.buffer, 0, rows);
    return true;
  }

  /** The `token_mask` pass over the first `seqs` rows of `logits` (`[seqs, vocab]` f32). */
  preparePass(logits: GPUBuffer, seqs: number): Promise<KernelDispatch> {
    return prepareKernel(this.device, {
      label: "sampler:token_mask",
      shader: "token_mask",
      entry: "apply_token_mask",
      uniform: [seqs, this.vocab, this.words, 0],
      buffers: { 1: logits, 8: this.buffer },
      workgroups: grid256(this.device, seqs * this.words),
    });
  }

  /** Destroy the rows' buffer. */
  destroy(): void {
    this.buffer.destroy();
  }
}
