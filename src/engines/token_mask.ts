/**
 * Guided decoding's hook into an engine's step: a request may carry a provider of token
 * bitmasks, asked before each of its tokens is sampled which tokens may come next.
 */
import { EngineError } from "../contract/errors.ts";

/**
 * What constrains a request's tokens step by step (a grammar, a JSON schema, a list of choices).
 * The engine asks it for each token before the step that samples it, with every earlier token
 * known: a constrained sequence waits for its last token's read-back instead of running steps
 * ahead as free sequences do.
 */
export interface TokenMaskProvider {
  /**
   * The tokens allowed next, given the tokens generated so far (prompt excluded): `ceil(vocab /
   * 32)` u32 words, bit `i % 32` of word `i / 32` set when token `i` may come next (all ones
   * leaves the step free; see `tokenBitmask` and `freeMask`). A throw, or a mask of another
   * length, fails this request only (`InvalidArgument`). A mask that allows no token (a dead
   * end), alone or with the request's own bans, ends the request with finish reason
   * `{error}`, unless the constraint is `complete` there. The same output may be asked about again (a preempted
   * sequence redoes its step), so the answer must depend on `output` alone.
   */
  nextMask(output: readonly number[]): Uint32Array;
  /**
   * When given, the engine calls it as soon as `output` is known (its last token read back)
   * and asks `nextMask(output)` only once it has resolved: the provider computes the mask
   * there, asynchronously, while other sequences' steps run. A rejection fails the request.
   */
  prepare?(output: readonly number[]): Promise<void>;
  /**
   * When given: whether the constraint is complete after `output` and nothing may follow it (a
   * grammar matched whole, with no stop token to end on). A sequence whose mask then allows no
   * token ends with `stop` (once `min_tokens` are out), not as a dead end.
   */
  complete?(output: readonly number[]): boolean;
  /** When given, called once the request has ended (its resources may be released). */
  dispose?(): void;
}

/**
 * The one token `mask` allows, or undefined when it allows none or several (a forced token:
 * the grammar admits exactly one continuation). Ids at or past `vocab` are never forced.
 */
export function onlyAllowed(mask: Uint32Array, vocab: number): number | undefined {
  let found: number | undefined;
  for (let i = 0; i < mask.length; i++) {
    const w = mask[i]!;
    if (w === 0) continue;
    if (found !== undefined || (w & (w - 1)) !== 0) return undefined;
    found = i * 32 + (31 - Math.clz32(w));
  }
  return found !== undefined && found < vocab ? found : undefined;
}

/** How forced stretches of guided decoding run (`WebGpuEngineOptions.guidedForcing`). */
export type GuidedForcing = "chunk" | "off";

/** The longest forced run appended without sampling. */
export const FORCED_RUN_MAX = 32;

/** The engine's forced-run limit: `FORCED_RUN_MAX` with `chunk`, 0 with `off`. */
export function forcedRunLimit(o: { guidedForcing?: GuidedForcing }): number {
  const f = o.guidedForcing ?? "chunk";
  if (f !== "chunk" && f !== "off") {
    throw EngineError.invalidField("guidedForcing", `"chunk" or "off", not ${JSON.stringify(f)}`);
  }
  return f === "chunk" ? FORCED_RUN_MAX : 0;
}
