/**
 * An array shape as JSON text: `[1, 2]` (`", "` between items). Item `i` satisfies the
 * `prefixItems[i]` of every merged subschema and each `items` that starts at or before `i`. Past
 * the prefixes, items are generated only when some subschema gives `items` (or none gives
 * `prefixItems`: `{type: "array"}` is any array); else only as many as `minItems` needs (Kiln's
 * strict default, as for objects).
 *
 * `contains` is met by construction: the first `minContains` items (after those of earlier
 * `contains`) satisfy its schema; with `maxContains`, every other item satisfies its negation, so
 * exactly `minContains` match. `uniqueItems` is enforced when it cannot fail (at most one item),
 * or when the items' values are finitely many (listed, booleans, null): then they are written as
 * distinct values in a fixed order. Anything else with `uniqueItems` is refused.
 */
import type { Context } from "./context.ts";
import { EMPTY, type Expr, lit, NONE, opt, rep, seq } from "./grammar.ts";
import { negRef } from "./negate.ts";
import { atLeast, ordered } from "./ordered.ts";
import { SchemaRefusal } from "./refusal.ts";
import type { Ref, Shape } from "./shape.ts";

/** Distinct values at most, for `uniqueItems`. */
const UNIQUE_VALUES = 64;

/** The JSON texts of the arrays `s` allows. */
export function arrayExpr(c: Context, s: Shape, ptr: string): Expr {
  const from = Math.max(s.prefix.length, ...s.tails.map((t) => t.from));
  const tailRefs = s.tails.flatMap((t) => t.refs);
  const at = (
    i: number,
  ): Ref[] => [...s.prefix[i] ?? [], ...s.tails.filter((t) => t.from <= i).flatMap((t) => t.refs)];
  // `contains`: positions assigned in order; those with maxContains negated elsewhere.
  const assigned: number[] = [];
  for (const [k, cn] of s.contains.entries()) {
    if (cn.max !== undefined && cn.min > cn.max) return NONE;
    for (let j = 0; j < cn.min; j++) assigned.push(k);
  }
  const capped = s.contains.map((cn, k) => ({ cn, k })).filter(({ cn }) => cn.max !== undefined);
  const refsAt = (i: number, base: Ref[]): Ref[] => [
    ...base,
    ...(assigned[i] === undefined ? [] : s.contains[assigned[i]!]!.refs),
    ...capped.filter(({ k }) => assigned[i] !== k).flatMap(({ cn }) => cn.refs.map(negRef)),
  ];
  const explicit = Math.max(from, assigned.length);
  const lo = Math.max(s.minItems, assigned.length);
  let hi = s.maxItems ?? Infinity;
  const generated = s.tails.some((t) => t.kind === "items") || s.prefix.length === 0;
  if (!generated) hi = Math.min(hi, Math.max(explicit, lo));
  if (lo > hi) return NONE;
  if (s.unique !== undefined && hi > 1) return uniqueExpr(c, s, ptr, tailRefs, lo, hi, explicit);
  const item = (i: number) => c.child(refsAt(i, at(i)), `${ptr}/items/${i}`);
  const tail = c.child(refsAt(explicit, tailRefs), `${ptr}/items`);
  const chain = (i: number): Expr => {
    if (i >= hi) return EMPTY;
    if (i === explicit) {
      const min = Math.max(lo - i, 0), max = hi - i;
      if (Number.isFinite(max)) c.budget.repeats(max, "maxItems", ptr);
      if (i > 0) return rep(seq(lit(", "), tail), min, max);
      const more = rep(seq(lit(", "), tail), Math.max(min - 1, 0), max - 1);
      return min > 0 ? seq(tail, more) : opt(seq(tail, more));
    }
    const one = seq(lit(i > 0 ? ", " : ""), item(i), chain(i + 1));
    return i < lo ? one : opt(one);
  };
  return seq(lit("["), chain(0), lit("]"));
}

/** `uniqueItems` over finitely many item values: distinct values in a fixed order. */
function uniqueExpr(
  c: Context,
  s: Shape,
  ptr: string,
  refs: Ref[],
  lo: number,
  hi: number,
  explicit: number,
): Expr {
  const refuse = (why: string): never => {
    throw new SchemaRefusal("uniqueItems", s.unique!, why);
  };
  if (explicit > 0 || s.contains.length > 0) {
    refuse("beside prefixItems or contains: Kiln cannot keep such items distinct");
  }
  const values = c.finiteValues(refs, UNIQUE_VALUES, "uniqueItems", s.unique!);
  if (values === undefined) {
    refuse(
      `Kiln keeps items distinct only when they have at most ${UNIQUE_VALUES} possible values (enum, const, boolean, null) or there is at most one (maxItems: 1)`,
    );
  }
  const members = values!.map((v) => ({ x: c.valueText(v), required: false }));
  const body = ordered(
    c.g,
    members,
    lo,
    hi === Infinity ? undefined : hi,
    atLeast(lo),
    (n) => c.budget.rules(n, "uniqueItems", ptr),
    "uniq",
  );
  return seq(lit("["), body, lit("]"));
}
