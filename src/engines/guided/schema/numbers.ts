/**
 * Numbers of a shape as JSON texts, exactly within their bounds. Bounds become inclusive decimal
 * bounds (`decimal.ts`: an exclusive bound is the next double past it), so every text written is
 * in range for an exact validator and for one that parses to doubles. Integers are canonical
 * (`-?(0|[1-9][0-9]*)`, `integers.ts`); other numbers are `-?(0|[1-9][0-9]*)\.[0-9]*[1-9]` (a
 * fraction ending in a non-zero digit, so the value is not an integer; no exponent), within the
 * bounds digit by digit. Values excluded by `not`/`oneOf`/`if` split the range around them.
 *
 * `multipleOf` keeps integers only: an integer multipleOf `m` (several: their least common
 * multiple) through the remainder automaton of `integers.ts`, within ±(2^53 - 1) so that a
 * floating-point validator's division agrees; a non-integer `m` only when `1/m` is a power of two
 * (then every integer is a multiple, and the division is exact in floating point). Any other
 * non-integer `multipleOf` is refused: validators divide in floating point and disagree (ajv
 * rejects 0.3 as a multiple of 0.1). Fractions have at most as many digits as the bounds are
 * written with, and at least 6 (so a model cannot run on in digits); a bound with more than 24
 * fraction digits is rounded inward to 24 (the numbers between are not written). With no integer
 * allowed, numbers stay within ±10^7 and 8 fraction digits (15 significant digits: a double keeps
 * them apart from every integer).
 */
import type { Budget } from "./budget.ts";
import {
  ceilDec,
  cmp,
  type Dec,
  decInt,
  decOf,
  floorDec,
  fractionDigits,
  negDec,
  nextDown,
  nextUp,
  roundDec,
} from "./decimal.ts";
import {
  alt,
  cls,
  DIGIT,
  digits,
  EMPTY,
  type Expr,
  type Grammar,
  lit,
  NONE,
  opt,
  rep,
  seq,
} from "./grammar.ts";
import { intRange } from "./integers.ts";
import { SchemaRefusal } from "./refusal.ts";
import { FRAC, INT, NUM, type Shape } from "./shape.ts";

const SAFE = 2n ** 53n - 1n;
const MAX_FRACTION = 24;
const MIN_FRACTION = 6;
const MOD_RULES = 2_000;
const MOD_VALUES = 1_000;

interface Interval {
  lo?: Dec;
  hi?: Dec;
}

/** The number texts `s` allows (its `INT`/`FRAC` kinds). */
export function numberExpr(g: Grammar, s: Shape, budget: Budget, ptr: string): Expr {
  let kinds = s.kinds & NUM;
  // Past the largest double: no number is in range.
  if ((s.lo?.excl && s.lo.v === Number.MAX_VALUE) || (s.hi?.excl && s.hi.v === -Number.MAX_VALUE)) {
    return NONE;
  }
  const excluded = s.notValues.map((n) => n.v).filter((v): v is number => typeof v === "number");
  const plain = s.lo === undefined && s.hi === undefined && excluded.length === 0;
  if (plain && s.multipleOf.length === 0 && kinds === NUM) return anyNumber();
  let m = 1n;
  for (const { v, ptr: at } of s.multipleOf) {
    if (Number.isInteger(v)) m = lcm(m, BigInt(v));
    else if (!Number.isInteger(Math.log2(1 / v)) || 1 / v > 2 ** 52) {
      throw new SchemaRefusal(
        "multipleOf",
        at,
        `a multiple of ${v} cannot be checked exactly: validators divide in floating point and ` +
          `disagree (0.3 is not a multiple of 0.1 in ajv); use an integer multipleOf`,
      );
    }
  }
  let whole: Interval = {
    ...bound(s.lo, "lo"),
    ...bound(s.hi, "hi"),
  };
  if (s.multipleOf.length > 0) {
    kinds &= INT;
    whole = clamp(whole, decInt(-SAFE), decInt(SAFE));
  }
  const parts: Expr[] = [];
  for (const iv of split(whole, excluded)) {
    if (kinds & INT) parts.push(integers(g, iv, m, budget, s.multipleOf[0]?.ptr ?? ptr));
    if (kinds & FRAC) {
      parts.push(
        fractions(g, kinds & INT ? iv : clamp(iv, ...FRAC_ONLY), kinds & INT ? digitsFor(s) : 8),
      );
    }
  }
  return alt(...parts);
}

/**
 * The fraction digits written for `s`'s numbers: at least 6, and as many as its bounds are
 * written with (24 at most), so a bound's own value can be written and a model cannot run on in
 * digits.
 */
function digitsFor(s: Shape): number {
  const digits = (b: { v: number } | undefined) =>
    b === undefined ? 0 : fractionDigits(decOf(b.v)).length;
  return Math.min(MAX_FRACTION, Math.max(MIN_FRACTION, digits(s.lo), digits(s.hi)));
}

const FRAC_ONLY: [Dec, Dec] = [negDec({ m: 999999999999999n, s: 8 }), {
  m: 999999999999999n,
  s: 8,
}];

/** Any JSON number. */
function anyNumber(): Expr {
  const int = alt(lit("0"), seq(digits("1", "9"), rep(DIGIT, 0, Infinity)));
  const frac = opt(seq(lit("."), rep(DIGIT, 1, Infinity)));
  const exp = opt(
    seq(
      cls([0x45, 0x45], [0x65, 0x65]),
      opt(cls([0x2b, 0x2b], [0x2d, 0x2d])),
      rep(DIGIT, 1, Infinity),
    ),
  );
  return seq(opt(lit("-")), int, frac, exp);
}

function lcm(a: bigint, b: bigint): bigint {
  let x = a, y = b;
  while (y !== 0n) [x, y] = [y, x % y];
  return (a / x) * b;
}

/** A bound as an inclusive decimal bound (exclusive: the next double past it). */
function bound(b: { v: number; excl: boolean } | undefined, side: "lo" | "hi"): Interval {
  if (b === undefined) return {};
  const v = b.excl ? (side === "lo" ? nextUp(b.v) : nextDown(b.v)) : b.v;
  return { [side]: roundDec(decOf(v), MAX_FRACTION, side === "lo" ? "ceil" : "floor") };
}

function clamp(iv: Interval, lo: Dec, hi: Dec): Interval {
  return {
    lo: iv.lo === undefined || cmp(iv.lo, lo) < 0 ? lo : iv.lo,
    hi: iv.hi === undefined || cmp(iv.hi, hi) > 0 ? hi : iv.hi,
  };
}

/** `iv` without the values `excluded` (each split off by the next doubles around it). */
function split(iv: Interval, excluded: number[]): Interval[] {
  let out = [iv];
  for (const x of [...new Set(excluded)].sort((a, b) => a - b)) {
    const d = decOf(x);
    out = out.flatMap((r) => {
      if ((r.lo !== undefined && cmp(d, r.lo) < 0) || (r.hi !== undefined && cmp(d, r.hi) > 0)) {
        return [r];
      }
      // The largest doubles have nothing past them: no interval on that side.
      const below = x === -Number.MAX_VALUE ? [] : [{ ...r, ...bound({ v: x, excl: true }, "hi") }];
      const above = x === Number.MAX_VALUE ? [] : [{ ...r, ...bound({ v: x, excl: true }, "lo") }];
      return [...below, ...above];
    });
  }
  return out.filter((r) => r.lo === undefined || r.hi === undefined || cmp(r.lo, r.hi) <= 0);
}

/** The integers of `iv` that are multiples of `m`. */
function integers(g: Grammar, iv: Interval, m: bigint, budget: Budget, ptr: string): Expr {
  const lo = iv.lo === undefined ? undefined : ceilDec(iv.lo);
  const hi = iv.hi === undefined ? undefined : floorDec(iv.hi);
  if (m > 1n && lo !== undefined && hi !== undefined) {
    if (lo > hi) return NONE;
    const width = Math.max(lo.toString().length, hi.toString().length);
    if (BigInt(width) * m > BigInt(MOD_RULES)) {
      const first = lo % m === 0n ? lo : lo + ((m - (((lo % m) + m) % m)) % m);
      const count = first > hi ? 0n : (hi - first) / m + 1n;
      if (count > BigInt(MOD_VALUES)) {
        throw new SchemaRefusal(
          "multipleOf",
          ptr,
          `${count} multiples of ${m} in range and ${m} remainders to track: narrow the range`,
        );
      }
      budget.values(Number(count), "multipleOf", ptr);
      const texts: Expr[] = [];
      for (let x = first; x <= hi; x += m) texts.push(lit(x.toString()));
      return alt(...texts);
    }
  }
  return intRange(g, lo, hi, m, { spend: (n) => budget.rules(n, "multipleOf", ptr) });
}

/** The non-integer numbers of `iv`, at most `maxDigits` fraction digits. */
function fractions(g: Grammar, iv: Interval, maxDigits: number): Expr {
  const { lo, hi } = iv;
  if (lo !== undefined && hi !== undefined && cmp(lo, hi) > 0) return NONE;
  const zero = decInt(0n);
  const parts: Expr[] = [];
  if (hi === undefined || hi.m > 0n) {
    parts.push(magnitudes(g, lo === undefined || lo.m < 0n ? zero : lo, hi, maxDigits));
  }
  if (lo === undefined || lo.m < 0n) {
    const a = hi === undefined || hi.m >= 0n ? zero : negDec(hi);
    parts.push(
      seq(lit("-"), magnitudes(g, a, lo === undefined ? undefined : negDec(lo), maxDigits)),
    );
  }
  return alt(...parts);
}

/** Non-integers from `a` (at least 0) to `b` (open when undefined), written without sign. */
function magnitudes(g: Grammar, a: Dec, b: Dec | undefined, maxDigits: number): Expr {
  const ia = floorDec(a), ib = b === undefined ? undefined : floorDec(b);
  const ga = fractionDigits(a), gb = b === undefined ? undefined : fractionDigits(b);
  const point = (ip: bigint, f: Expr) => seq(lit(`${ip}.`), f);
  if (ib !== undefined && ia === ib) return point(ia, fraction(ga, gb!, maxDigits));
  const parts = [point(ia, fraction(ga, undefined, maxDigits))];
  const inner = intRange(g, ia + 1n, ib === undefined ? undefined : ib - 1n, 1n, { spend() {} });
  parts.push(seq(inner, lit("."), fraction("", undefined, maxDigits)));
  if (ib !== undefined) parts.push(point(ib, fraction("", gb!, maxDigits)));
  return alt(...parts);
}

/**
 * Fraction digits `f` (1 to `maxDigits` of them, the last not 0) with `0.f` at least `0.lo`
 * and, when `hi` is given, at most `0.hi` (`lo`, `hi`: digit strings, no trailing zeros).
 */
function fraction(lo: string, hi: string | undefined, maxDigits: number): Expr {
  const free = (left: number): Expr =>
    left <= 0 ? NONE : seq(rep(DIGIT, 0, left - 1), digits("1", "9"));
  const walk = (j: number, tl: boolean, th: boolean): Expr => {
    tl &&= j < lo.length; // past the lower bound's digits, at or above it already
    if (!tl && !th) return free(maxDigits - j);
    if (j >= maxDigits) return NONE;
    const a = tl ? Number(lo[j] ?? "0") : 0;
    const b = th ? (j < hi!.length ? Number(hi![j]) : -1) : 9;
    if (b < a) return NONE;
    const after = (d: number, nl: boolean, nh: boolean): Expr =>
      seq(
        lit(String(d)),
        alt(d !== 0 && (!nl || j + 1 >= lo.length) ? EMPTY : NONE, walk(j + 1, nl, nh)),
      );
    const parts: Expr[] = [after(a, tl, th && a === b)];
    if (b > a) {
      if (b > a + 1) {
        parts.push(seq(digits(String(a + 1), String(b - 1)), opt(free(maxDigits - j - 1))));
      }
      parts.push(after(b, false, th));
    }
    return alt(...parts);
  };
  return walk(0, lo !== "", hi !== undefined);
}
