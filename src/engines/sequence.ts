/**
 * One request inside the WebGPU engine: its tokens, KV blocks, stop conditions and the channel
 * its chunks flow through to the consumer's stream.
 */
import type { GenerateContext } from "../contract/engine.ts";
import { EngineError } from "../contract/errors.ts";
import * as out from "../contract/output.ts";
import type { FinishReason, LLMEngineOutput, PreprocessedRequest } from "../contract/types.ts";
import { NO_TOKEN, type SeqSampling } from "../gpu/kernels/sampling.ts";
import { maskWords } from "../gpu/token_mask_bits.ts";
import { onlyAllowed, type TokenMaskProvider } from "./token_mask.ts";
import { Channel } from "./channel.ts";
import type { SeqBlocks } from "./webgpu/block_manager.ts";

export class Sequence {
  readonly tokens: number[];
  readonly promptLength: number;
  /** Tokens whose K/V are in the cache. */
  computed = 0;
  /** Tokens streamed to the consumer. */
  generated = 0;
  /** Tokens sampled on the GPU whose values have not been read back yet. */
  ahead = 0;
  /**
   * Tokens at the end of `tokens` that the CPU appended (forced by the guide) and that the GPU
   * token store does not hold yet; the engine writes them before the step that reads them.
   */
  unstored = 0;
  /** Bumped on preemption: results of steps submitted before it are dropped. */
  epoch = 0;
  /** The sequence's slot in the engine's GPU token store, while it runs. */
  slot: number | undefined;
  /**
   * Whether the next step may sample before the last token is known on the CPU. Multi-token
   * bad words and a token mask provider need the exact history on the CPU; every other
   * parameter reads it on the GPU.
   */
  readonly pipelined: boolean;
  blocks: SeqBlocks | undefined;
  finished = false;
  /** How it ended: a finish reason's kind, or "failed". */
  outcome: "finished" | "cancelled" | "failed" | undefined;
  readonly maxTokens: number;
  readonly minTokens: number;
  readonly seed: number;
  readonly channel = new Channel();
  readonly signal: AbortSignal;
  readonly #controller = new AbortController();
  #resolveDone!: () => void;
  /** Resolves when the sequence has finished, failed or been cancelled. */
  readonly done = new Promise<void>((r) => (this.#resolveDone = r));
  readonly #shown: Set<number>;
  readonly #hidden: Set<number>;
  readonly #eos: Set<number>;
  /** `tokens.length` when the guide's prepared mask was made, or -1. */
  #maskAt = -1;
  #preparing: { at: number; done: Promise<void> } | undefined;
  /** Tokens forced since the last sampled one. */
  #run = 0;
  /** The longest forced run (0: none are forced). */
  readonly #forceUpTo: number;

  /**
   * `maxLength`: the most tokens (prompt and output) the sequence may reach, the context length
   * or the whole KV cache when that is smaller; `max_tokens` beyond it ends with `length` there.
   * `guide`: what constrains each token (guided decoding) over a vocabulary of `vocab` tokens;
   * with `forceUpTo` > 0 and a provider that prepares its masks, a token that the mask after
   * the output allows alone is appended at once (up to `forceUpTo` in a row), without a
   * sampling step: the engine computes such a run as one chunk.
   */
  constructor(
    readonly request: PreprocessedRequest,
    readonly ctx: GenerateContext,
    maxLength: number,
    readonly guide?: {
      provider: TokenMaskProvider;
      vocab: number;
      forceUpTo?: number;
      /** Counts the tokens forced. */
      tally?: { forcedTokens: number };
    },
  ) {
    this.signal = AbortSignal.any([ctx.signal, this.#controller.signal]);
    this.tokens = [...request.token_ids];
    this.promptLength = this.tokens.length;
    const stop = request.stop_conditions;
    const room = Math.max(0, maxLength - this.promptLength);
    this.maxTokens = Math.min(stop.max_tokens ?? room, room);
    this.minTokens = stop.min_tokens ?? 0;
    this.#shown = new Set(stop.stop_token_ids ?? []);
    this.#hidden = new Set(stop.stop_token_ids_hidden ?? []);
    this.#eos = new Set(stop.ignore_eos ? [] : request.eos_token_ids);
    this.seed = request.sampling_options.seed ?? Math.floor(Math.random() * 2 ** 52);
    this.pipelined = guide === undefined &&
      !(request.sampling_options.bad_words_token_ids ?? []).some((w) => w.length > 1);
    // Logprobs would need the model's distribution at each forced position, and bad words'
    // bans depend on the history: such requests sample every token.
    this.#forceUpTo = guide?.provider.prepare === undefined ||
        request.output_options.logprobs !== undefined ||
        (request.sampling_options.bad_words_token_ids ?? []).length > 0
      ? 0
      : guide.forceUpTo ?? 0;
  }

  /** Tokens so far, counting those still on the GPU. */
  get length(): number {
    return this.tokens.length + this.ahead;
  }

  /** Whether a step may sample this sequence's next token now. */
  canSample(maxAhead: number): boolean {
    return !this.finished && this.generated + this.ahead < this.maxTokens &&
      (this.ahead === 0 || (this.pipelined && this.ahead < maxAhead)) && this.maskReady;
  }

  /** Whether the guide (if any) has its mask for the next token ready. */
  get maskReady(): boolean {
    return this.guide?.provider.prepare === undefined || this.#maskAt === this.tokens.length;
  }

  /**
   * Have a guide that prepares its masks ahead (`TokenMaskProvider.prepare`) prepare the one
   * after the tokens known now; resolves once it is ready or the sequence has ended (a
   * rejection fails the sequence). Resolves at once for other sequences.
   */
  prepareMask(): Promise<void> {
    const provider = this.guide?.provider;
    const at = this.tokens.length;
    if (provider?.prepare === undefined || this.finished || this.#maskAt === at) {
      return Promise.resolve();
    }
    if (this.#preparing?.at === at) return this.#preparing.done;
    const done = provider.prepare(this.tokens.slice(this.promptLength)).then(
      () => {
        if (this.tokens.length !== at) return undefined;
        this.#maskAt = at;
        // A forced token is taken at once and the mask after it prepared, run to its end.
        return this.#force() ? this.prepareMask() : undefined;
      },
      (e) => this.fail(EngineError.from(e)),
    );
    this.#preparing = { at, done };
    return done;
  }

  /**
   * This step's sampling parameters; EOS and stop tokens are banned until `min_tokens`.
   * `storeStart` is where the sequence's tokens begin in the GPU token store. `offset` > 0: the
   * row of a speculative step that draws the token after `offset` drafted ones (which the store
   * holds after the known tokens), with that token's draw and history.
   */
  sampling(storeStart: number, offset = 0): SeqSampling {
    const s = this.request.sampling_options;
    const index = this.generated + this.ahead + offset;
    const p: SeqSampling = {
      history: { tokens: this.tokens, outputStart: this.promptLength },
      historyAt: {
        start: storeStart,
        outputStart: storeStart + this.promptLength,
        end: storeStart + this.length + offset,
      },
      seed: this.seed,
      step: index,
      logprobs: this.request.output_options.logprobs ?? 0,
    };
    for (
      const k of [
        "temperature",
        "top_k",
        "top_p",
        "min_p",
        "repetition_penalty",
        "frequency_penalty",
        "presence_penalty",
      ] as const
    ) {
      const v = s[k];
      if (v !== undefined) p[k] = v;
    }
    if (s.allowed_token_ids) p.allowed = s.allowed_token_ids;
    if (s.bad_words_token_ids) p.badWords = s.bad_words_token_ids;
    if (index < this.minTokens) p.banned = [...this.#eos, ...this.#shown, ...this.#hidden];
    const mask = this.#nextMask();
    if (mask) p.tokenMask = mask;
    return p;
  }

  /**
   * Append the next token without sampling when the prepared mask allows it alone and no
   * other rule of the request could refuse it (sampling would draw it whatever the logits,
   * with the same RNG counter left for the next draw); true when one was appended.
   */
  #force(): boolean {
    if (this.#forceUpTo === 0 || this.#run >= this.#forceUpTo) return false;
    if (this.finished || this.ahead !== 0 || !this.maskReady) return false;
    const { provider, vocab } = this.guide!;
    let token: number | undefined;
    try {
      token = onlyAllowed(provider.nextMask(this.tokens.slice(this.promptLength)), vocab);
    } catch {
      return false; // the step's own nextMask reports it
    }
    if (token === undefined) return false;
    const allowed = this.request.sampling_options.allowed_token_ids;
    if (allowed && !allowed.includes(token)) return false;
    const stops = (t: number) => this.#eos.has(t) || this.#shown.has(t) || this.#hidden.has(t);
    if (this.generated < this.minTokens && stops(token)) return false;
    const before = this.tokens.length;
    this.#take(token, 0);

    if (this.guide!.tally) this.guide!.tally.forcedTokens++;
    this.#run++;
    this.unstored += this.tokens.length - before;
    return true;
  }

  /** The guide's mask for the next token; a guide that fails fails this sequence only. */
  #nextMask(): Uint32Array | undefined {
    if (this.guide === undefined || this.finished) return undefined;
    const { provider, vocab } = this.guide;
    try {
      const mask = provider.nextMask(this.tokens.slice(this.promptLength));
      const words = maskWords(vocab);
      if (!(mask instanceof Uint32Array) || mask.length !== words) {
        throw EngineError.invalidArgument(
          `token mask: ${describeMask(mask)} where ${words} u32 words (vocab ${vocab}) are needed`,
        );
      }
      if (mask.every((w) => w === 0)) {
        const output = this.tokens.slice(this.promptLength);
        // A grammar matched whole with no stop token to end on: the output is complete.
        if (provider.complete?.(output) && this.generated >= this.minTokens) {
          this.#end("stop", []);
        } else this.#deadEnd("the guide allows no token");
        return undefined;
      }
      return mask;
    } catch (e) {
      // The step it was planned in still samples the row, unconstrained; the token is dropped.
      this.fail(EngineError.from(e));
      return undefined;
    }
  }

  /**
   * A guided sequence that no token may continue: it ends with finish reason `{error}` (the
   * step it was planned in still samples its row; that token is dropped).
   */
  #deadEnd(why: string): void {
    this.#end({
      error: `guided decoding: dead end at output position ${this.generated}: ${why} ` +
        "(a grammar that cannot go on, or one whose next tokens allowed_token_ids, " +
        "bad_words_token_ids or the stop tokens banned before min_tokens all forbid)",
    }, []);
  }

  #end(reason: FinishReason, ids: number[], extra: Partial<LLMEngineOutput> = {}): void {
    this.guide?.provider.dispose?.();
    this.finished = true;
    this.outcome = reason === "cancelled"
      ? "cancelled"
      : typeof reason === "object"
      ? "failed"
      : "finished";
    this.channel.push({
      ...out.withUsage({
        ...out.withTokens({ token_ids: [], finish_reason: reason }, ids),
        ...extra,
      }, out.usage(this.promptLength, this.generated)),
    });
    this.channel.close();
    this.#resolveDone();
  }

  /** Cancel from the engine side (`abort(ctx)`). */
  abort(): void {
    this.#controller.abort();
  }

  /** Take a sampled token: stream it, or finish by a stop condition. */
  accept(
    token: number,
    logprob: number,
    top?: { ids: ArrayLike<number>; logprobs: ArrayLike<number> },
  ): void {
    this.#run = 0;
    this.#take(token, logprob, top);
  }

  #take(
    token: number,
    logprob: number,
    top?: { ids: ArrayLike<number>; logprobs: ArrayLike<number> },
  ): void {
    if (token === NO_TOKEN && this.guide !== undefined) {
      return this.#deadEnd("no token is allowed");
    }
    if (token === NO_TOKEN) {
      return this.fail(EngineError.invalidArgument(
        `request: no token is allowed at output position ${this.generated} (token mask, ` +
          "allowed_token_ids and the tokens banned before min_tokens leave none)",
      ));
    }
    const mayStop = this.generated >= this.minTokens;
    const lp = this.request.output_options.logprobs !== undefined;
    const extra = (): Partial<LLMEngineOutput> =>
      lp
        ? {
          log_probs: [logprob],
          ...(top
            ? {
              // Fewer when fewer tokens could be drawn (the sampler lists no other).
              top_logprobs: [
                Array.from({
                  length: Math.min(this.request.output_options.logprobs ?? 0, top.ids.length),
                }, (_, r) => ({
                  rank: r,
                  token_id: top.ids[r]!,
                  logprob: top.logprobs[r]!,
                })),
              ],
            }
            : {}),
        }
        : {};
    if (mayStop && this.#hidden.has(token)) return this.#end("stop", [], { stop_reason: token });
    if (mayStop && this.#eos.has(token)) return this.#end("eos", []);
    if (this.generated === 0) this.ctx.notifyFirstToken();
    this.tokens.push(token);
    this.generated++;
    if (mayStop && this.#shown.has(token)) {
      return this.#end("stop", [token], { stop_reason: token, ...extra() });
    }
    if (this.generated >= this.maxTokens) return this.#end("length", [token], extra());
    this.channel.push({ ...out.token(token), ...extra() });
  }

  cancel(): void {
    if (!this.finished) this.#end("cancelled", []);
  }

  fail(error: EngineError): void {
    if (this.finished) return;
    this.guide?.provider.dispose?.();
    this.finished = true;
    this.outcome = "failed";
    this.channel.fail(error);
    this.#resolveDone();
  }

  /** `max_tokens: 0`: one terminal length chunk. */
  finishEmpty(): void {
    this.#end("length", []);
  }

  /**
   * End with `length` now, with the tokens streamed so far (a sequence that can neither grow
   * nor ever be readmitted: the cache cannot hold it). Tokens still in flight are dropped.
   */
  truncate(): void {
    if (!this.finished) this.#end("length", []);
  }
}

const describeMask = (m: unknown): string =>
  m instanceof Uint32Array ? `${m.length} words` : `a ${Object.prototype.toString.call(m)}`;
