/**
 * A request's matcher, in the grammar worker (`RemoteMatcher`), and the token mask provider
 * over it (`GrammarGuide`): the matcher follows the request's output (accepting new tokens,
 * rolling back to the common prefix when the output asked about is shorter or differs), and the
 * mask for an output is computed ahead, in `prepare`, as soon as its last token is known, so
 * `nextMask` answers at once when the step is planned.
 */
import { EngineError } from "../../contract/errors.ts";
import type { TokenMaskProvider } from "../token_mask.ts";
import { type GrammarClient, GrammarFailure, STALE } from "./grammar_client.ts";
import { type Lane, MAIN, PROBE } from "./grammar_protocol.ts";
import { FIELD, type GuideSpec } from "./options.ts";

/** Tries at a call whose instance was dropped meanwhile (by others' faults) before giving up. */
const TRIES = 8;

/**
 * What a step gives: the output index it refused; or the tokens forced after the output (each
 * the only one its mask allowed, in order; none unless asked), then the mask after them, or the
 * matcher's end.
 */
export type StepResult =
  | { mask: Uint32Array; forced: number[] }
  | { terminated: true; forced: number[] }
  | { rejected: number };

/** Forced tokens a step follows at most (the engine's longest forced run, and one more). */
export const AHEAD = 33;

/**
 * One request's matcher in the grammar worker. It is made in the probe lane, where its grammar
 * compiled the first time (or in the main lane, where the grammar is compiled already). It keeps
 * the tokens it has accepted, its grammar's spec and its stop tokens, so when the instance it
 * lived in is dropped (another request's fault) it is built again in the main lane's: its
 * grammar compiled there (or found compiled), a matcher made, its tokens accepted again.
 */
export class RemoteMatcher {
  /** Tokens the matcher has accepted, in order. */
  readonly accepted: number[] = [];
  #lane: Lane = PROBE;
  #gen = -1;
  #id = 0;
  #closed = false;

  constructor(
    readonly client: GrammarClient,
    /** The canonical text of `spec` (the compiled-grammar cache's key). */
    readonly key: string,
    readonly spec: GuideSpec,
    readonly stops: number[],
    readonly terminate: boolean,
  ) {}

  /**
   * Make it in the current instance. `first`: its first build, whose failures are its own
   * request's (a refusal); a rebuild's are `lost`.
   */
  async build(first: boolean): Promise<void> {
    for (let i = 0; i < TRIES; i++) {
      const lane = first && !this.client.compiled(this.key, MAIN) ? PROBE : MAIN;
      try {
        const g = await this.client.grammar(this.key, this.spec, lane, !first);
        const { reply, gen } = await this.client.call({
          op: "matcher",
          lane,
          grammar: g.id,
          stops: this.stops,
          terminate: this.terminate,
          accept: [...this.accepted],
        }, { urgent: true, gen: g.gen });
        if (!("matcher" in reply)) throw new GrammarFailure("lost", "its tokens were refused");
        [this.#lane, this.#gen, this.#id] = [lane, gen, reply.matcher];
        if (!first) this.client.counts.rebuilds++;
        if (this.#closed) this.#drop();
        return;
      } catch (e) {
        if (e === STALE) continue;
        if (first || !(e instanceof GrammarFailure)) throw e;
        throw new GrammarFailure("lost", `could not be rebuilt: ${e.message}`);
      }
    }
    throw new GrammarFailure("lost", "the grammar library kept failing on other requests");
  }

  /**
   * Follow `output` (roll back to the common prefix, accept the rest); the next mask, after up
   * to `ahead` forced tokens.
   */
  async step(output: readonly number[], ahead = 0): Promise<StepResult> {
    for (let i = 0; i < TRIES; i++) {
      if (this.#gen !== this.client.generation(this.#lane)) await this.build(false);
      const a = this.accepted;
      let common = 0;
      while (common < a.length && common < output.length && a[common] === output[common]) common++;
      const accept = output.slice(common);
      let reply;
      try {
        ({ reply } = await this.client.call(
          {
            op: "step",
            lane: this.#lane,
            matcher: this.#id,
            rollback: a.length - common,
            accept,
            ahead,
          },
          { urgent: true, gen: this.#gen },
        ));
      } catch (e) {
        if (e === STALE) continue;
        throw e;
      }
      a.length = common;
      if ("rejected" in reply) {
        a.push(...accept.slice(0, reply.rejected));
        return { rejected: common + reply.rejected };
      }
      a.push(...accept);
      if (!("mask" in reply) && !("terminated" in reply)) {
        throw new Error(`unexpected reply ${Object.keys(reply)}`);
      }
      const forced = reply.forced ?? [];
      a.push(...forced);
      if ("terminated" in reply) return { terminated: true, forced };
      const m = reply.mask;
      return { mask: new Uint32Array(m.buffer, m.byteOffset, m.length), forced };
    }
    throw new GrammarFailure("lost", "the grammar library kept failing on other requests");
  }

  /** Release it in the worker (after any call in flight). */
  dispose(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#drop();
  }

  #drop(): void {
    if (this.#gen !== this.client.generation(this.#lane)) return;
    this.client.call(
      { op: "drop", lane: this.#lane, grammars: [], matchers: [this.#id] },
      { gen: this.#gen },
    ).catch(() => {});
  }
}

/** `e`, a grammar call's failure while following the output of `field`'s request. */
export function stepError(field: string, e: unknown): EngineError {
  if (!(e instanceof GrammarFailure)) return EngineError.from(e);
  switch (e.kind) {
    case "fault":
      return EngineError.invalidField(field, "the grammar library failed on this constraint");
    case "timeout":
      return EngineError.invalidField(
        field,
        `the grammar library took too long on this constraint (${e.message})`,
      );
    case "lost":
      return new EngineError(
        "Unknown",
        `${field}: guided decoding failed: the grammar library failed on another request and ` +
          `this request's matcher ${e.message}`,
      );
    default:
      return new EngineError("Unknown", `${field}: ${e.message}`);
  }
}

/** A token mask provider over a {@linkcode RemoteMatcher}. */
export class GrammarGuide implements TokenMaskProvider {
  #ready: { output: number[]; mask: Uint32Array } | undefined;
  /**
   * What the last step told: the masks after `base`, each longer prefix of `base + forced`, and
   * whether the grammar ended there (`ended`: matched whole, nothing may follow).
   */
  #known: { base: number[]; forced: number[]; last: Uint32Array; ended: boolean } | undefined;
  #chain: Promise<void> = Promise.resolve();
  #disposed = false;

  constructor(
    readonly matcher: RemoteMatcher,
    /** u32 words of a mask (`ceil(vocab / 32)`). */
    readonly words: number,
    readonly field: string = FIELD,
    /** Tokens never allowed whatever the grammar says: bit clear (see `Guides`). */
    readonly restrict?: Uint32Array,
  ) {}

  /** Compute the mask that follows `output` (calls run one after another). */
  prepare(output: readonly number[]): Promise<void> {
    const copy = [...output];
    const run = this.#chain.then(() => this.#prepare(copy));
    this.#chain = run.then(() => {}, () => {});
    return run;
  }

  async #prepare(output: number[]): Promise<void> {
    if (this.#disposed) return;
    if (this.#ready && same(this.#ready.output, output)) return;
    // Within a forced run the last step already told the mask: no call to the worker.
    const known = this.#lookup(output);
    if (known !== undefined) {
      this.#ready = { output, mask: known };
      return;
    }
    let r: StepResult;
    try {
      r = await this.matcher.step(output, AHEAD);
    } catch (e) {
      throw stepError(this.field, e);
    }
    if ("rejected" in r) {
      throw EngineError.invalidField(
        this.field,
        `token ${output[r.rejected]} at output position ${r.rejected} is outside the grammar`,
      );
    }
    // After a stop token the grammar is over: nothing may follow (a dead end).
    const last = this.#restricted("mask" in r ? r.mask : new Uint32Array(this.words));
    this.#known = { base: output, forced: r.forced, last, ended: "terminated" in r };
    this.#ready = { output, mask: this.#lookup(output)! };
  }

  /** The mask after `output` if the last step told it (a prefix of its run, or its end). */
  #lookup(output: readonly number[]): Uint32Array | undefined {
    const k = this.#known;
    if (k === undefined) return undefined;
    const extra = output.length - k.base.length;
    if (extra < 0 || extra > k.forced.length) return undefined;
    for (let i = 0; i < output.length; i++) {
      if (output[i] !== (i < k.base.length ? k.base[i] : k.forced[i - k.base.length])) {
        return undefined;
      }
    }
    if (extra === k.forced.length) return k.last;
    // A forced token's mask: that token alone.
    const only = new Uint32Array(this.words);
    const t = k.forced[extra]!;
    only[t >>> 5] = 1 << (t & 31);
    return this.#restricted(only);
  }

  /** `mask` with `restrict`'s bans applied. */
  #restricted(mask: Uint32Array): Uint32Array {
    const x = this.restrict;
    if (x !== undefined) { for (let i = 0; i < mask.length; i++) mask[i]! &= x[i]!; }
    return mask;
  }

  /** Whether the grammar was matched whole at `output` (the end of the last step's run). */
  complete(output: readonly number[]): boolean {
    const k = this.#known;
    return k !== undefined && k.ended && same(output, [...k.base, ...k.forced]);
  }

  nextMask(output: readonly number[]): Uint32Array {
    const r = this.#ready;
    if (r === undefined || !same(r.output, output)) {
      throw new EngineError(
        "Unknown",
        `${this.field}: the mask for output position ${output.length} was not prepared`,
      );
    }
    return r.mask;
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    // After any call in flight, which may still use the matcher.
    void this.#chain.then(() => this.matcher.dispose());
  }
}

function same(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((t, i) => t === b[i]);
}
