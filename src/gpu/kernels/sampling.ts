/**
 * The GPU sampler for a batch of sequences: penalty counts from each sequence's history, then
 * one workgroup per sequence applies masks, penalties, temperature, top-k, top-p and min-p and
 * draws (or takes the argmax). Tokens stay on the GPU (`tokens` can feed the next step). A
 * sequence may carry guided decoding's token bitmask (`tokenMask`), applied to its logits before
 * anything else, inside the sampling kernel or by a pass before it (`TokenMaskPath`). Logprobs
 * are those of the distribution each token is drawn from (`referenceLogprobs`).
 */
import { EngineError } from "../../contract/errors.ts";
import { readBuffer, storageBuffer } from "../buffers.ts";
import { type Dispatch, encodeDispatches } from "../dispatch.ts";
import {
  bannedByBadWords,
  type History,
  MIN_TEMPERATURE,
  type SamplingParams,
} from "./sampling_params.ts";
import { grid256, type KernelDispatch, prepareKernel } from "./kernel.ts";
import { type TokenMaskPath, TokenMaskRows } from "./token_mask.ts";
import { decodeResults, decodeSampled, MAX_TOP_LOGPROBS } from "./sampling_results.ts";
import type { SampledToken, SampleResult } from "./sampling_results.ts";
export {
  decodeResults,
  decodeSampled,
  MAX_TOP_LOGPROBS,
  type SampledToken,
  type SampleResult,
} from "./sampling_results.ts";
export type { TokenMaskPath } from "./token_mask.ts";

/** The token a sequence gets when its masks leave it none (the request must then fail). */
export const NO_TOKEN = 0xffffffff;

/**
 * The largest vocabulary the sampler takes: top-p sums masses as 64-bit fixed point with 44
 * fraction bits, exact up to 2^20 tokens.
 */
export const MAX_SAMPLER_VOCAB = 2 ** 20;
const PARAM_WORDS = 16;
const FLAG_GIVEN_U = 1, FLAG_ALLOWED = 2, FLAG_BANNED = 4;

/** One sequence's sampling step. */
export interface SeqSampling extends SamplingParams {
  /** The sequence's tokens so far, for penalties and bad words. */
  history: History;
  /** 64-bit seed as a safe integer; with `step` it fixes the draw. */
  seed?: number;
  /** Index of the draw in the sequence (the RNG counter). */
  step?: number;
  /** The uniform draw itself (tests): overrides seed/step. */
  u?: number;
  /**
   * Top alternatives whose logprobs to report (0..20); fewer when fewer tokens can be drawn.
   * Logprobs, the chosen token's too, are those of the distribution it is drawn from, as
   * `referenceLogprobs` computes them.
   */
  logprobs?: number;
  /**
   * Guided decoding's bitmask for this step: `ceil(vocab / 32)` words, bit `i % 32` of word
   * `i / 32` set when token `i` may be drawn. Forbidden tokens are -inf in the logits the sampler
   * reads (greedy, draws and logprobs alike, as with `allowed`); none left gives
   * {@linkcode NO_TOKEN}.
   */
  tokenMask?: Uint32Array;
  /** `bad_words_token_ids`: banned at this step as `bannedByBadWords` says. */
  badWords?: readonly (readonly number[])[];
  /**
   * With a sampler over an external token store: where this sequence's tokens lie in it
   * (`[start, end)`, output from `outputStart`). `history.tokens` is then only read for bad words.
   */
  historyAt?: { start: number; outputStart: number; end: number };
}

/**
 * Samples one token per sequence on the GPU from a batch's logits; owns its buffers until
 * `destroy()`.
 */
export class Sampler {
  /** u32 words of one token bitmap (`ceil(vocab / 32)`). */
  readonly words: number;
  /** Per sequence: the sampling parameters (16 words). */
  readonly params: GPUBuffer;
  /** Per sequence and token: u32 occurrence counts for the penalties, [maxSeqs, vocab]. */
  readonly counts: GPUBuffer;
  /** Per sequence: the allowed bitmap, then the banned one. */
  readonly masks: GPUBuffer;
  /** Processed logits; the final distributions when asked for. */
  readonly work: GPUBuffer;
  /** Per sequence: token id, then the bits of its f32 logprob. `result[2s]` feeds the next step. */
  readonly result: GPUBuffer;
  /** Per sequence: 20 ids (a shorter list ends with {@linkcode NO_TOKEN}), then 20 logprob bits. */
  readonly top: GPUBuffer;
  /** Per sequence: where its tokens lie in the history buffer (4 u32). */
  readonly ranges: GPUBuffer;
  /** Guided decoding's bitmask rows of the batch (written only when a sequence has one). */
  readonly tokenMask: TokenMaskRows;
  /** Where the bitmask is applied. */
  readonly maskPath: TokenMaskPath;
  /** Whether the batch last written has a bitmask row to apply. */
  #masked = false;
  #history: GPUBuffer;
  #historyCapacity = 0;
  readonly #external: boolean;
  #dispatches = new Map<string, KernelDispatch[]>();
  /** The logits buffer the cached dispatches read; a new one (reallocated) drops them. */
  #logits: GPUBuffer | undefined;

  /**
   * `history`: a token store the engine keeps on the GPU (each sequence's tokens, output ones
   * appended by the GPU); sequences then say where theirs lie (`historyAt`) instead of being
   * uploaded every step. `maskPath`: where guided decoding's bitmask is applied (default
   * `pass`, the cheaper on lavapipe: see `docs/guided_decoding.md`).
   */
  constructor(
    readonly device: GPUDevice,
    readonly maxSeqs: number,
    readonly vocab: number,
    options: { history?: GPUBuffer; maskPath?: TokenMaskPath } = {},
  ) {
    if (!Number.isInteger(vocab) || vocab < 1 || vocab > MAX_SAMPLER_VOCAB) {
      throw EngineError.invalidArgument(
        `sampler: vocab must be an integer in [1, ${MAX_SAMPLER_VOCAB}], got ${vocab}`,
      );
    }
    if (!Number.isInteger(maxSeqs) || maxSeqs < 1) {
      throw EngineError.invalidArgument(
        `sampler: maxSeqs must be a positive integer, got ${maxSeqs}`,
      );
    }
    this.words = Math.ceil(vocab / 32);
    const f = (label: string, bytes: number) => storageBuffer(device, `sampler:${label}`, bytes);
    this.params = f("params", maxSeqs * PARAM_WORDS * 4);
    this.counts = f("counts", maxSeqs * vocab * 4);
    this.masks = f("masks", maxSeqs * 2 * this.words * 4);
    this.work = f("work", maxSeqs * vocab * 4);
    this.result = f("result", maxSeqs * 8);
    this.top = f("top", maxSeqs * 2 * MAX_TOP_LOGPROBS * 4);
    this.ranges = f("ranges", maxSeqs * 16);
    this.#external = options.history !== undefined;
    this.#history = options.history ?? f("history", 4);
    this.tokenMask = new TokenMaskRows(device, maxSeqs, vocab);
    this.maskPath = options.maskPath ?? "pass";
  }

  /** Write the batch's parameters, masks and histories (before `encode`). */
  write(seqs: readonly SeqSampling[]): void {
    if (seqs.length > this.maxSeqs) {
      throw new Error(`sampler: ${seqs.length} > ${this.maxSeqs} sequences`);
    }
    const q = this.device.queue;
    const words = new ArrayBuffer(seqs.length * PARAM_WORDS * 4);
    const u32 = new Uint32Array(words), f32 = new Float32Array(words);
    const masks = new Uint32Array(seqs.length * 2 * this.words);
    const ranges = new Uint32Array(seqs.length * 4);
    const history: number[] = [];
    seqs.forEach((s, i) => {
      const o = i * PARAM_WORDS;
      // The shader's greedy test is `temperature == 0`: below the floor, send 0.
      const t = s.temperature ?? 1;
      f32[o] = t < MIN_TEMPERATURE ? 0 : t;
      u32[o + 1] = s.top_k !== undefined && s.top_k > 0 ? Math.min(s.top_k, this.vocab) : 0;
      f32[o + 2] = s.top_p ?? 1;
      f32[o + 3] = s.min_p ?? 0;
      f32[o + 4] = s.repetition_penalty ?? 1;
      f32[o + 5] = s.frequency_penalty ?? 0;
      f32[o + 6] = s.presence_penalty ?? 0;
      const seed = s.seed ?? 0;
      u32[o + 7] = seed >>> 0;
      u32[o + 8] = Math.floor(seed / 2 ** 32) >>> 0;
      u32[o + 9] = s.step ?? 0;
      u32[o + 10] = Math.min(s.logprobs ?? 0, MAX_TOP_LOGPROBS);
      let flags = 0;
      if (s.u !== undefined) {
        flags |= FLAG_GIVEN_U;
        f32[o + 12] = s.u;
      }
      const mark = (which: number, ids: readonly number[]) => {
        const base = (2 * i + which) * this.words;
        for (const t of ids) if (t < this.vocab) masks[base + (t >>> 5)]! |= 1 << (t & 31);
      };
      if (s.allowed) {
        flags |= FLAG_ALLOWED;
        mark(0, s.allowed);
      }
      const banned = [...(s.banned ?? []), ...bannedByBadWords(s.badWords ?? [], s.history.tokens)];
      if (banned.length > 0) {
        flags |= FLAG_BANNED;
        mark(1, banned);
      }
      u32[o + 11] = flags;
      if (this.#external) {
        const at = s.historyAt;
        if (at === undefined) throw new Error("sampler: historyAt is needed with a token store");
        ranges.set([at.start, at.outputStart, at.end, 0], i * 4);
        return;
      }
      ranges.set([
        history.length,
        history.length + s.history.outputStart,
        history.length + s.history.tokens.length,
        0,
      ], i * 4);
      history.push(...s.history.tokens);
    });
    if (history.length > this.#historyCapacity) {
      this.#history.destroy();
      this.#historyCapacity = Math.max(history.length, this.#historyCapacity * 2, 1024);
      this.#history = storageBuffer(this.device, "sampler:history", this.#historyCapacity * 4);
      this.#dropDispatches();
    }
    this.#masked = this.tokenMask.write(seqs.map((s) => s.tokenMask));
    q.writeBuffer(this.params, 0, words);
    q.writeBuffer(this.masks, 0, masks);
    q.writeBuffer(this.ranges, 0, ranges);
    if (history.length > 0) q.writeBuffer(this.#history, 0, Uint32Array.from(history));
  }

  async #prepare(
    logits: GPUBuffer,
    seqs: number,
    writeProbs: boolean,
    masked: boolean,
  ): Promise<Dispatch[]> {
    if (logits !== this.#logits) {
      this.#dropDispatches();
      this.#logits = logits;
    }
    const key = `${seqs}:${writeProbs}:${masked}`;
    const cached = this.#dispatches.get(key);
    if (cached) return cached;
    const d = this.device;
    const hist = [seqs, this.vocab, 0, 0];
    const fused = masked && this.maskPath === "fused";
    const list = await Promise.all([
      ...(masked && !fused ? [this.tokenMask.preparePass(logits, seqs)] : []),
      prepareKernel(d, {
        label: "sampler:clear_counts",
        shader: "sampling_history",
        entry: "clear_counts",
        uniform: hist,
        buffers: { 3: this.counts },
        workgroups: grid256(d, seqs * this.vocab),
      }),
      prepareKernel(d, {
        label: "sampler:count_history",
        shader: "sampling_history",
        entry: "count_history",
        uniform: hist,
        buffers: { 1: this.#history, 2: this.ranges, 3: this.counts },
        workgroups: [seqs],
      }),
      prepareKernel(d, {
        label: "sampler:sample",
        shader: "sampling",
        entry: "sample",
        constants: { TOKEN_MASK: fused ? 1 : 0 },
        uniform: [seqs, this.vocab, this.words, writeProbs ? 1 : 0],
        buffers: {
          1: logits,
          2: this.params,
          3: this.counts,
          4: this.masks,
          5: this.work,
          6: this.result,
          7: this.top,
          8: this.tokenMask.buffer,
        },
        workgroups: [seqs],
      }),
    ]);
    this.#dispatches.set(key, list);
    return list;
  }

  /**
   * Build the sampler's pipelines, and its dispatches for one sequence over `logits` (returned),
   * before the first step (an engine does so while it starts). Its kernels take no per-request constants:
   * every sampling setting (greedy, top-k/p, min-p, penalties, masks, logprobs) runs on them.
   */
  async warm(logits: GPUBuffer): Promise<Dispatch[]> {
    // The bitmask's pipelines too: a first guided request compiles nothing.
    await this.#prepare(logits, 1, false, true);
    return this.#prepare(logits, 1, false, false);
  }

  /**
   * Record the sampling of `seqs` rows of `logits` (`[seqs, vocab]`), as last written. With
   * bitmask rows on the `pass` path, the forbidden logits are overwritten with -inf in place.
   */
  async encode(
    encoder: GPUCommandEncoder,
    logits: GPUBuffer,
    seqs: number,
    writeProbs = false,
  ): Promise<void> {
    const list = await this.#prepare(logits, seqs, writeProbs, this.#masked);
    encodeDispatches(encoder, list, "sampler");
  }

  /** Write, encode, submit and read back (tests and simple callers). */
  async sample(
    logits: GPUBuffer,
    seqs: readonly SeqSampling[],
    writeProbs = false,
  ): Promise<SampleResult> {
    this.write(seqs);
    const encoder = this.device.createCommandEncoder({ label: "sampler" });
    await this.encode(encoder, logits, seqs.length, writeProbs);
    this.device.queue.submit([encoder.finish()]);
    const n = seqs.length;
    const [res, top] = await Promise.all([
      readBuffer(this.device, this.result, n * 8),
      readBuffer(this.device, this.top, n * 2 * MAX_TOP_LOGPROBS * 4),
    ]);
    const probs = writeProbs
      ? await readBuffer(this.device, this.work, n * this.vocab * 4)
      : undefined;
    return decodeResults(res, top, n, probs);
  }

  /** Read back the chosen tokens and logprobs (and, with `withTop`, the top alternatives). */
  async read(n: number, withTop = false): Promise<SampledToken[]> {
    const [buf, top] = await Promise.all([
      readBuffer(this.device, this.result, n * 8),
      withTop
        ? readBuffer(this.device, this.top, n * 2 * MAX_TOP_LOGPROBS * 4)
        : Promise.resolve(undefined),
    ]);
    return decodeSampled(buf, top, n);
  }

  /** Destroy the buffers the sampler owns (not an external history store). */
  destroy(): void {
    const owned = [
      this.params,
      this.counts,
      this.masks,
      this.work,
      this.result,
      this.top,
      this.ranges,
      this.tokenMask.buffer,
      ...(this.#external ? [] : [this.#history]),
    ];
    for (const b of owned) b.destroy();
    this.#dropDispatches();
  }

  #dropDispatches(): void {
    for (const list of this.#dispatches.values()) for (const d of list) d.uniform.destroy();
    this.#dispatches.clear();
  }
}
