/**
 * What the array and object emitters need from the compiler (`compile.ts`), as an interface so
 * that they do not import it back.
 */
import type { Checker } from "./accepts.ts";
import type { Budget } from "./budget.ts";
import type { Expr, Grammar } from "./grammar.ts";
import type { Normalizer } from "./normalize.ts";
import type { Ref } from "./shape.ts";

/** The compiler, as the emitters see it. */
export interface Context {
  readonly g: Grammar;
  readonly budget: Budget;
  readonly norm: Normalizer;
  readonly checker: Checker;
  /** The rule for a value satisfying all of `refs` (none: any JSON value). */
  child(refs: readonly Ref[], hint: string): Expr;
  /**
   * The values satisfying all of `refs` when they are finitely many (at most `max`) and listed
   * or null/boolean; `undefined` otherwise.
   */
  finiteValues(
    refs: readonly Ref[],
    max: number,
    keyword: string,
    ptr: string,
  ): unknown[] | undefined;
  /** `v`'s canonical JSON text (`", "` between items, `": "` after keys). */
  valueText(v: unknown): Expr;
  /** The text of any JSON string (the string side's). */
  anyString(ptr: string): Expr;
}
