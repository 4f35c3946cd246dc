/**
 * A token mask provider over one XGrammar `GrammarMatcher`: the matcher follows the request's
 * output (accepting new tokens, rolling back to the common prefix when the output asked about
 * is shorter or differs), and the mask for an output is computed ahead, in `prepare`, as soon
 * as its last token is known, so `nextMask` answers at once when the step is planned.
 */
import { EngineError } from "../../contract/errors.ts";
import type { TokenMaskProvider } from "../token_mask.ts";
import { FIELD } from "./options.ts";
import type { XMatcher } from "./xgrammar.ts";

export class GrammarGuide implements TokenMaskProvider {
  /** Tokens the matcher has accepted, in order. */
  readonly #accepted: number[] = [];
  #ready: { output: number[]; mask: Uint32Array } | undefined;
  #chain: Promise<void> = Promise.resolve();
  #disposed = false;

  constructor(
    readonly matcher: XMatcher,
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
    this.#follow(output);
    // After a stop token the grammar is over: nothing may follow (a dead end).
    const mask = this.matcher.isTerminated()
      ? new Uint32Array(this.words)
      : new Uint32Array((await this.matcher.getNextTokenBitmask()).buffer);
    const r = this.restrict;
    if (r !== undefined) { for (let i = 0; i < mask.length; i++) mask[i]! &= r[i]!; }
    this.#ready = { output, mask };
  }

  /** Roll the matcher back to the longest common prefix with `output`, then accept the rest. */
  #follow(output: readonly number[]): void {
    const a = this.#accepted;
    let common = 0;
    while (common < a.length && common < output.length && a[common] === output[common]) common++;
    if (common < a.length) {
      this.matcher.rollBack(a.length - common);
      a.length = common;
    }
    for (let i = common; i < output.length; i++) {
      if (!this.matcher.acceptToken(output[i]!)) {
        throw EngineError.invalidField(
          this.field,
          `token ${output[i]} at output position ${i} is outside the grammar`,
        );
      }
      a.push(output[i]!);
    }
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
