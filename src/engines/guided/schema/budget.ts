/**
 * What compiling one schema may spend, so that a huge or adversarial schema is refused quickly
 * (a `SchemaRefusal` naming the keyword where the budget ran out) rather than handed to XGrammar,
 * whose compile time grows faster than linearly in the rules it is given.
 */
import { SchemaRefusal } from "./refusal.ts";

/** The limits (defaults: {@linkcode LIMITS}). */
export interface Limits {
  /** Subschemas nested in one another (`properties`, `items`, `anyOf`, ... each a level). */
  maxDepth: number;
  /** Objects and arrays in the schema document. */
  maxNodes: number;
  /** Alternatives one subschema may expand to (`anyOf` beside `anyOf`, `oneOf`, `not`). */
  maxShapes: number;
  /** Grammar rules written. */
  maxRules: number;
  /** Repetitions written (`{m,n}` counts n: XGrammar writes a rule per repetition). */
  maxRepeats: number;
  /** Values listed by `enum`s, all together. */
  maxValues: number;
  /** Characters of grammar text. */
  maxText: number;
  /** Milliseconds of compiling. */
  maxMs: number;
}

/**
 * Kiln's limits. Measured against XGrammar's `compileGrammar` over a 256-byte vocabulary (this
 * machine, Deno): 1,000 chained rules compile in ~60 ms, 5,000 in ~1.3 s, 20,000 in ~13 s;
 * 10,000 enum strings in ~0.9 s.
 */
export const LIMITS: Limits = {
  maxDepth: 64,
  maxNodes: 100_000,
  maxShapes: 256,
  maxRules: 2_000,
  maxRepeats: 20_000,
  maxValues: 10_000,
  maxText: 1 << 20,
  maxMs: 2_000,
};

/** The budget of one compile. */
export class Budget {
  readonly #start = performance.now();
  #rules = 0;
  #repeats = 0;
  #values = 0;

  constructor(readonly limits: Limits = LIMITS) {}

  #over(keyword: string, ptr: string, what: string): never {
    throw new SchemaRefusal(
      keyword,
      ptr,
      `the schema is too large to compile: ${what} (Kiln's limit)`,
    );
  }

  /** Count `n` rules made for `keyword` at `ptr`. */
  rules(n: number, keyword: string, ptr: string): void {
    if ((this.#rules += n) > this.limits.maxRules) {
      this.#over(keyword, ptr, `more than ${this.limits.maxRules} grammar rules`);
    }
    this.time(keyword, ptr);
  }

  /** Count `n` repetitions. */
  repeats(n: number, keyword: string, ptr: string): void {
    if ((this.#repeats += n) > this.limits.maxRepeats) {
      this.#over(
        keyword,
        ptr,
        `more than ${this.limits.maxRepeats} repetitions (item and length bounds)`,
      );
    }
  }

  /** Count `n` listed values. */
  values(n: number, keyword: string, ptr: string): void {
    if ((this.#values += n) > this.limits.maxValues) {
      this.#over(keyword, ptr, `more than ${this.limits.maxValues} listed values`);
    }
  }

  /** Check one list of `n` values (before any is counted). */
  listed(n: number, keyword: string, ptr: string): void {
    if (n > this.limits.maxValues) {
      this.#over(keyword, ptr, `more than ${this.limits.maxValues} listed values`);
    }
  }

  /** Check `n` alternatives of one subschema. */
  shapes(n: number, keyword: string, ptr: string): void {
    if (n > this.limits.maxShapes) {
      this.#over(keyword, ptr, `more than ${this.limits.maxShapes} alternatives after combining`);
    }
  }

  /** Check the text's length. */
  text(n: number): void {
    if (n > this.limits.maxText) {
      this.#over("$schema", "", `more than ${this.limits.maxText} characters of grammar`);
    }
  }

  /** Check the time spent. */
  time(keyword: string, ptr: string): void {
    if (performance.now() - this.#start > this.limits.maxMs) {
      this.#over(keyword, ptr, `compiling took more than ${this.limits.maxMs} ms`);
    }
  }
}
