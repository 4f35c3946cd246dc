/**
 * Members in a fixed order, each required or optional, separated by `", "`, their number
 * counted when bounds ask for it: an object's declared properties (`minProperties`,
 * `maxProperties`), the distinct items of a `uniqueItems` array. What follows the last member
 * (an object's other properties) is given the count so far. Optional members share their
 * continuations through rules, one per (member, count), so the grammar grows linearly.
 */
import { alt, EMPTY, type Expr, type Grammar, lit, NONE, seq } from "./grammar.ts";

/** One member: its text, and whether it must be there. */
export interface Member {
  readonly x: Expr;
  readonly required: boolean;
}

/**
 * `members` in order, between `min` and `max` of them (`max` undefined: any number), then
 * `end(count, started)` (`count` exact up to `max`, else capped at `min`). `spend` is told each
 * rule made.
 */
export function ordered(
  g: Grammar,
  members: readonly Member[],
  min: number,
  max: number | undefined,
  end: (count: number) => Expr,
  spend: (rules: number) => void,
  hint: string,
): Expr {
  const cap = max !== undefined ? max + 1 : Math.max(min, 1);
  const rules = new Map<string, Expr>();
  const from = (i: number, c: number): Expr => {
    if (max !== undefined && c > max) return NONE;
    if (i === members.length) return end(c);
    const m = members[i]!;
    const take = () => seq(lit(c > 0 ? ", " : ""), m.x, from(i + 1, Math.min(c + 1, cap)));
    if (m.required) return take();
    const key = `${i}:${c}`;
    const known = rules.get(key);
    if (known !== undefined) return known;
    const id = g.rule(`${hint}_${i}`);
    const ref: Expr = { k: "ref", id };
    rules.set(key, ref);
    spend(1);
    g.define(id, alt(take(), from(i + 1, c)));
    return ref;
  };
  return from(0, 0);
}

/** `end` for members with nothing after them: the count must reach `min`. */
export const atLeast = (min: number): (count: number) => Expr => (count) =>
  count >= min ? EMPTY : NONE;
