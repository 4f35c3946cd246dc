/**
 * Integer ranges as grammars of their canonical decimal texts: `-?(0|[1-9][0-9]*)` restricted to
 * exactly the integers from `lo` to `hi` (either may be open), and optionally to the multiples of
 * `m`. A range is split by sign and by digit count; texts of one length between two bounds are
 * built digit by digit, following the lower bound, the upper bound or neither (then free). With a
 * modulus the free part tracks the remainder so far (decimal divisibility is a finite automaton of
 * `m` states: `r -> (10 r + d) mod m`), one rule per (digits left, remainder).
 */
import {
  alt,
  DIGIT,
  digits,
  EMPTY,
  type Expr,
  type Grammar,
  lit,
  NONE,
  rep,
  seq,
} from "./grammar.ts";

/** What building a range may spend: `spend(n)` is told each rule made. */
export interface IntBudget {
  spend(rules: number): void;
}

/**
 * The texts of the integers in `[lo, hi]` (`undefined`: open) divisible by `m` (at least 1; with
 * `m > 1` both bounds must be given).
 */
export function intRange(
  g: Grammar,
  lo: bigint | undefined,
  hi: bigint | undefined,
  m: bigint,
  budget: IntBudget,
): Expr {
  if (lo !== undefined && hi !== undefined && lo > hi) return NONE;
  if (m > 1n && (lo === undefined || hi === undefined)) {
    throw new RangeError("a modulus needs both bounds");
  }
  const free = new FreeDigits(g, m, budget);
  const parts: Expr[] = [];
  // Non-negative: [max(lo, 0), hi].
  if (hi === undefined || hi >= 0n) {
    parts.push(natural(lo === undefined || lo < 0n ? 0n : lo, hi, free));
  }
  // Negative: -x for x in [max(-hi, 1), -lo].
  if (lo === undefined || lo < 0n) {
    const a = hi === undefined || hi >= 0n ? 1n : -hi;
    parts.push(seq(lit("-"), natural(a, lo === undefined ? undefined : -lo, free)));
  }
  return alt(...parts);
}

/** The texts of the naturals in `[a, b]` (`b` open when undefined), `a` at least 0. */
function natural(a: bigint, b: bigint | undefined, free: FreeDigits): Expr {
  if (b !== undefined && a > b) return NONE;
  const A = a.toString(), B = b?.toString();
  const la = A.length, lb = B?.length ?? Infinity;
  const parts: Expr[] = [fixed(A, la === lb ? B! : "9".repeat(la), free)];
  // Lengths strictly between: a non-zero digit, then free digits.
  const top = Math.min(lb - 1, Infinity);
  if (top > la) {
    if (free.m === 1n) parts.push(seq(digits("1", "9"), rep(DIGIT, la, top - 1)));
    else for (let n = la + 1; n <= top; n++) parts.push(free.span(1, 9, 0n, n - 1));
  }
  if (lb !== Infinity && lb > la) parts.push(fixed("1" + "0".repeat(lb - 1), B!, free));
  return alt(...parts);
}

/** The digit strings of one length from `lo` to `hi` whose value is a multiple of `free.m`. */
function fixed(lo: string, hi: string, free: FreeDigits): Expr {
  // Tight on both bounds while the prefix is common; then on one bound each, or free between.
  let i = 0, r = 0n;
  while (i < lo.length && lo[i] === hi[i]) r = step(r, lo, i++, free.m);
  const prefix = lit(lo.slice(0, i));
  if (i === lo.length) return r === 0n ? prefix : NONE;
  const a = lo.charCodeAt(i) - 48, b = hi.charCodeAt(i) - 48, k = lo.length - i - 1;
  return seq(
    prefix,
    alt(
      seq(lit(String(a)), follow(lo, i + 1, step(r, lo, i, free.m), "lo", free)),
      free.span(a + 1, b - 1, r, k),
      seq(lit(String(b)), follow(hi, i + 1, step(r, hi, i, free.m), "hi", free)),
    ),
  );
}

/** The remainder after digit `s[i]`. */
const step = (r: bigint, s: string, i: number, m: bigint) =>
  (r * 10n + BigInt(s.charCodeAt(i) - 48)) % m;

/**
 * The digit strings of `bound.length - j` digits at or above (`lo`) or at or below (`hi`)
 * `bound`'s digits from `j`, taking remainder `r` to 0.
 */
function follow(bound: string, j: number, r: bigint, side: "lo" | "hi", free: FreeDigits): Expr {
  const k = bound.length - j;
  if (k === 0) return r === 0n ? EMPTY : NONE;
  const rest = bound.slice(j);
  if (free.m === 1n && rest === (side === "lo" ? "0" : "9").repeat(k)) return rep(DIGIT, k, k);
  const c = rest.charCodeAt(0) - 48;
  const away = side === "lo" ? free.span(c + 1, 9, r, k - 1) : free.span(0, c - 1, r, k - 1);
  const along = seq(lit(String(c)), follow(bound, j + 1, step(r, bound, j, free.m), side, free));
  return alt(away, along);
}

/** Free digit strings: any digits, or with a modulus the remainder automaton's rules. */
class FreeDigits {
  readonly #rules = new Map<string, Expr>();

  constructor(readonly g: Grammar, readonly m: bigint, readonly budget: IntBudget) {}

  /** A digit from `a` to `b` after remainder `r`, then `k` free digits, ending at remainder 0. */
  span(a: number, b: number, r: bigint, k: number): Expr {
    if (a > b) return NONE;
    if (this.m === 1n) return seq(digits(String(a), String(b)), rep(DIGIT, k, k));
    const byNext = new Map<bigint, number[]>();
    for (let d = a; d <= b; d++) {
      const t = (r * 10n + BigInt(d)) % this.m;
      byNext.set(t, [...byNext.get(t) ?? [], d]);
    }
    return alt(...[...byNext].map(([t, ds]) => seq(digitSet(ds), this.rest(k, t))));
  }

  /** `k` digits taking remainder `r` to 0. */
  rest(k: number, r: bigint): Expr {
    if (k === 0) return r === 0n ? EMPTY : NONE;
    const key = `${k}:${r}`;
    const known = this.#rules.get(key);
    if (known !== undefined) return known;
    const id = this.g.rule(`mod_${k}_${r}`);
    const ref: Expr = { k: "ref", id };
    this.#rules.set(key, ref);
    this.budget.spend(1);
    this.g.define(id, this.span(0, 9, r, k - 1));
    return ref;
  }
}

/** A class (or literal) of the digits `ds`, in increasing order. */
function digitSet(ds: number[]): Expr {
  const runs: [number, number][] = [];
  for (const d of ds) {
    const last = runs.at(-1);
    if (last !== undefined && last[1] === d - 1) last[1] = d;
    else runs.push([d, d]);
  }
  if (runs.length === 1) return digits(String(runs[0]![0]), String(runs[0]![1]));
  return { k: "cls", ranges: runs.map(([x, y]) => [x + 48, y + 48] as [number, number]) };
}
