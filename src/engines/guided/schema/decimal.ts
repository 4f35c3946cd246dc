/**
 * Exact decimals for number bounds: a double's bound is read as the decimal of its shortest text
 * (`String(x)`: what the schema's author wrote, `0.1` for 0.1), and compared with JSON number
 * texts exactly. A text whose exact value lies at or past an inclusive decimal bound is, once
 * parsed to a double, at or past the bound too (rounding to the nearest double is monotonic), so
 * a grammar built on these bounds is right for exact and floating-point validators alike. An
 * exclusive bound `b` becomes the inclusive bound of the next double past it, for the same reason.
 */

/** The value `m / 10^s` (`s` at least 0). */
export interface Dec {
  readonly m: bigint;
  readonly s: number;
}

/** `x`'s shortest decimal text as an exact decimal (`x` finite). */
export function decOf(x: number): Dec {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(x));
  if (match === null) throw new RangeError(`not a finite number: ${x}`);
  const [, sign, whole, frac = "", exp = "0"] = match;
  let m = BigInt(`${whole}${frac}`);
  let s = frac.length - Number(exp);
  if (s < 0) {
    m *= 10n ** BigInt(-s);
    s = 0;
  }
  return { m: sign === "-" ? -m : m, s };
}

/** The integer `n` as a decimal. */
export function decInt(n: bigint): Dec {
  return { m: n, s: 0 };
}

/** -1, 0 or 1 as `a` is below, equal to or above `b`. */
export function cmp(a: Dec, b: Dec): number {
  const s = Math.max(a.s, b.s);
  const x = a.m * 10n ** BigInt(s - a.s), y = b.m * 10n ** BigInt(s - b.s);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The greatest integer at most `a`. */
export function floorDec(a: Dec): bigint {
  const d = 10n ** BigInt(a.s);
  const q = a.m / d;
  return a.m < 0n && q * d !== a.m ? q - 1n : q;
}

/** The least integer at least `a`. */
export function ceilDec(a: Dec): bigint {
  return -floorDec({ m: -a.m, s: a.s });
}

/** `a - floor(a)` as fraction digits (`"25"` for 3.25; `""` for an integer), trailing zeros dropped. */
export function fractionDigits(a: Dec): string {
  const d = 10n ** BigInt(a.s);
  const rest = a.m - floorDec(a) * d;
  if (rest === 0n) return "";
  return rest.toString().padStart(a.s, "0").replace(/0+$/, "");
}

/** `a` rounded to `digits` fraction digits, up (`"ceil"`) or down (`"floor"`). */
export function roundDec(a: Dec, digits: number, way: "ceil" | "floor"): Dec {
  if (a.s <= digits) return a;
  const scaled: Dec = { m: a.m, s: a.s - digits };
  return { m: way === "ceil" ? ceilDec(scaled) : floorDec(scaled), s: digits };
}

/** `-a`. */
export function negDec(a: Dec): Dec {
  return { m: -a.m, s: a.s };
}

const view = new DataView(new ArrayBuffer(8));

/** The next double above `x` (`x` finite; the largest finite double has none: Infinity). */
export function nextUp(x: number): number {
  if (x === 0) return Number.MIN_VALUE;
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  view.setBigUint64(0, x > 0 ? bits + 1n : bits - 1n);
  return view.getFloat64(0);
}

/** The next double below `x`. */
export function nextDown(x: number): number {
  return -nextUp(-x);
}
