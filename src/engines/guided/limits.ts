/**
 * What guided decoding allows one constraint: the time one grammar-library call may take, and
 * the size of what is compiled. A constraint past either is refused by name (`InvalidArgument`).
 */
import { EngineError } from "../../contract/errors.ts";
import { FIELD, type GuideSpec } from "./options.ts";

/** Guided decoding's budgets (an engine option: `guidedLimits`). */
export interface GuidedLimits {
  /**
   * Milliseconds one call into XGrammar may run (a compile; a matcher's mask or rebuild) before
   * the grammar worker is terminated and the constraint refused (default 20,000: compiles were
   * measured at 1 to 700 ms for schemas, 2 s for a 50-property schema over GPT-2's vocabulary,
   * 5 to 10 s for a 60,000-string `choice` on a loaded 2-core machine). Not enforced where
   * XGrammar runs on the engine's own thread (a service worker), which nothing can interrupt.
   */
  compileTimeoutMs?: number;
  /** Longest text compiled: a schema's JSON, a regex, a grammar, all choices together (chars). */
  maxGrammarChars?: number;
  /** Most strings in a `choice`. */
  maxChoices?: number;
  /** Refused constraints remembered, and refused again at once (the least recent forgotten). */
  refusedCapacity?: number;
  /** Compiled grammars kept (the least recently used dropped). */
  cacheCapacity?: number;
  /** Run XGrammar in a worker of its own (default: where the realm can start one). */
  worker?: boolean;
}

/** The defaults of {@linkcode GuidedLimits}. */
export const DEFAULT_LIMITS: Required<GuidedLimits> = {
  compileTimeoutMs: 20_000,
  maxGrammarChars: 4 << 20,
  maxChoices: 100_000,
  refusedCapacity: 256,
  cacheCapacity: 64,
  worker: true,
};

/** `limits` over the defaults, each checked. */
export function guidedLimits(limits: GuidedLimits = {}): Required<GuidedLimits> {
  const out = { ...DEFAULT_LIMITS };
  for (const [k, v] of Object.entries(limits) as [keyof GuidedLimits, unknown][]) {
    if (v === undefined) continue;
    if (k === "worker") {
      if (typeof v !== "boolean") {
        throw EngineError.invalidField("guidedLimits.worker", "a boolean");
      }
      out.worker = v;
    } else if (k in DEFAULT_LIMITS) {
      if (typeof v !== "number" || !(v > 0)) {
        throw EngineError.invalidField(`guidedLimits.${k}`, "a positive number");
      }
      out[k] = v;
    } else {
      throw EngineError.invalidField(`guidedLimits.${k}`, "unknown option");
    }
  }
  return out;
}

/**
 * Refuse `spec` when it is past the size limits: its text (every string in it, whatever its
 * kind) and, for `choice`, its number of strings. Returns the length of its text.
 */
export function checkSize(spec: GuideSpec, limits: Required<GuidedLimits>): number {
  const field = `${FIELD}.${spec.key}`;
  if (spec.key === "choice" && spec.choices.length > limits.maxChoices) {
    throw EngineError.invalidField(
      field,
      `${spec.choices.length} strings, more than the ${limits.maxChoices} allowed`,
    );
  }
  let chars = 0;
  for (const [k, v] of Object.entries(spec)) {
    if (typeof v === "string" && k !== "key") chars += v.length;
    else if (Array.isArray(v)) { for (let i = 0; i < v.length; i++) chars += v[i].length ?? 0; }
  }
  if (chars > limits.maxGrammarChars) {
    throw EngineError.invalidField(
      field,
      `${chars} characters of text, more than the ${limits.maxGrammarChars} allowed`,
    );
  }
  return chars;
}
