/**
 * Number ranges, exactly: 10,000 random `integer` and `number` schemas (small, negative,
 * multi-digit, fractional, huge past 2^53; inclusive, exclusive, open) compiled and read back
 * (`test_ebnf.ts`). Every text the grammar accepts is in range both exactly (decimal) and as a
 * double (as ajv compares); every value in range by the documented contract (a bound is its
 * shortest decimal; an exclusive one the next double past it) is accepted: every integer of a
 * small range (41 values at most) is enumerated; of larger ones the ends and values at random,
 * and decimals near the bounds. `multipleOf`
 * likewise over 1,000 ranges, enumerated.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { compileSchema } from "./compile.ts";
import { nextDown, nextUp } from "./decimal.ts";
import { derives, type Ebnf, parseEbnf, sample } from "./test_ebnf.ts";
import { prng } from "./test_schemas.ts";

/** An exact decimal `m / 10^s`, read from a JSON number text (written here, apart from `decimal.ts`). */
function exact(text: string): [bigint, number] {
  const [, sign, digits, frac = "", exp = "0"] = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(
    text,
  )!;
  let m = BigInt(digits! + frac), s = frac.length - Number(exp);
  if (s < 0) (m *= 10n ** BigInt(-s), s = 0);
  return [sign === "-" ? -m : m, s];
}

/** -1, 0, 1 as the number text `a` is below, at or above `b`. */
function compare(a: string, b: string): number {
  const [x, sx] = exact(a), [y, sy] = exact(b);
  const s = Math.max(sx, sy);
  const d = x * 10n ** BigInt(s - sx) - y * 10n ** BigInt(s - sy);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
}

interface Range {
  type: "integer" | "number";
  lo?: { v: number; excl: boolean };
  hi?: { v: number; excl: boolean };
}

function schemaOf(r: Range): Record<string, unknown> {
  const s: Record<string, unknown> = { type: r.type };
  if (r.lo) s[r.lo.excl ? "exclusiveMinimum" : "minimum"] = r.lo.v;
  if (r.hi) s[r.hi.excl ? "exclusiveMaximum" : "maximum"] = r.hi.v;
  return s;
}

/** Whether `text` is valid for `r`, exactly and as a double. */
function valid(r: Range, text: string): boolean {
  const x = Number(text);
  if (r.type === "integer" && !/^-?\d+$/.test(text)) return false;
  const exactly = (b: Range["lo"], side: 1 | -1) =>
    b === undefined ||
    (b.excl ? compare(text, String(b.v)) * side > 0 : compare(text, String(b.v)) * side >= 0);
  const double = (b: Range["lo"], side: 1 | -1) =>
    b === undefined || (b.excl ? (x - b.v) * side > 0 : x === b.v || (x - b.v) * side > 0);
  return exactly(r.lo, 1) && exactly(r.hi, -1) && double(r.lo, 1) && double(r.hi, -1);
}

/**
 * Whether `text` is in range by the contract: inclusive bounds, exclusive ones as the next
 * double; at most 6 fraction digits, or as many as a bound is written with.
 */
function inContract(r: Range, text: string): boolean {
  const places = (t: string) => /\.(\d+)$/.exec(t)?.[1]?.length ?? 0;
  const most = Math.max(6, ...[r.lo, r.hi].map((b) => (b === undefined ? 0 : places(String(b.v)))));
  if (places(text) > most) return false;
  const lo = r.lo && String(r.lo.excl ? nextUp(r.lo.v) : r.lo.v);
  const hi = r.hi && String(r.hi.excl ? nextDown(r.hi.v) : r.hi.v);
  return (lo === undefined || compare(text, lo) >= 0) &&
    (hi === undefined || compare(text, hi) <= 0);
}

function randomRange(random: () => number): Range {
  const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)]!;
  const int = (a: number, b: number) => a + Math.floor(random() * (b - a + 1));
  const value = pick([
    () => int(-60, 60),
    () => int(-2_000_000, 2_000_000),
    () => int(-9999, 9999) / pick([10, 100, 1000, 8]),
    () => pick([1, -1]) * pick([2 ** 53, 2 ** 53 + 2, 1e16, 1e20, 123456789012345680000, 1e25]),
    () => pick([0, 0.1, 0.5, 1, -1]),
  ]);
  const a = value(), b = pick([() => a + int(0, 40), () => a + int(0, 5) / 4, value])();
  const [lo, hi] = a <= b ? [a, b] : [b, a];
  return {
    type: pick(["integer", "number"]),
    ...(random() < 0.9 ? { lo: { v: lo, excl: random() < 0.4 } } : {}),
    ...(random() < 0.9 ? { hi: { v: hi, excl: random() < 0.4 } } : {}),
  };
}

function compiled(r: Range, schema: unknown = schemaOf(r)): Ebnf | undefined {
  try {
    return parseEbnf(compileSchema(schema));
  } catch (e) {
    if ((e as Error).name === "SchemaRefusal") return undefined; // nothing in range
    throw e;
  }
}

/** Whether `t` is a number's canonical text (`9.5`, not `9.50`, `9.0`, `-0` or `09`). */
const canonical = (t: string) => !/\.\d*0$|^-0$|^-?0\d/.test(t);

/** Random decimal texts near and within `r` (integers and up to 6 fraction digits). */
function candidates(r: Range, random: () => number): string[] {
  const base = [r.lo?.v, r.hi?.v, 0].filter((x): x is number => x !== undefined);
  const out: string[] = [];
  for (const b of base) {
    for (const d of [0, 1, -1]) {
      const whole = BigInt(Math.round(b)) + BigInt(d);
      out.push(whole.toString());
      if (r.type === "number") {
        out.push(
          `${whole < 0n ? "-" : ""}${(whole < 0n ? -whole : whole)}.${
            Math.floor(random() * 999999) + 1
          }`.replace(/0+$/, ""),
        );
      }
    }
  }
  // Prefixes of each bound's text ("0.0" of 0.05), and the bound with a digit more.
  for (const b of base.filter((x) => Number.isFinite(x) && !/e/.test(String(x)))) {
    const t = String(b);
    for (let k = 1; k <= t.length; k++) out.push(t.slice(0, k));
    if (t.includes(".")) out.push(`${t}1`, `${t}9`);
  }
  return out
    .map((t) => t.replace(/^-0$/, "0").replace(/^(-?\d+)\.$/, "$1"))
    .filter((t) => /^-?\d+(\.\d+)?$/.test(t));
}

Deno.test("10,000 random ranges: accepted texts are in range, values in range are accepted", () => {
  const random = prng(2026);
  let enumerated = 0, empty = 0;
  for (let i = 0; i < 10_000; i++) {
    const r = randomRange(random);
    const g = compiled(r);
    const what = JSON.stringify(schemaOf(r));
    const lo = r.lo === undefined ? undefined : BigInt(Math.ceil(r.lo.v)) - 3n;
    const hi = r.hi === undefined ? undefined : BigInt(Math.floor(r.hi.v)) + 3n;
    if (g === undefined) {
      // Refused: then nothing is in range (by the contract).
      empty++;
      for (const t of candidates(r, random)) {
        ok(!inContract(r, t) || !valid(r, t), `${what} refused, yet ${t} is in range`);
      }
      continue;
    }
    for (let k = 0; k < 4; k++) {
      const t = sample(g, random);
      ok(valid(r, t), `${what} accepts ${t}`);
    }
    // Integers: every one of a small range; the ends and 20 at random of a large one.
    const ints: bigint[] = [];
    if (lo !== undefined && hi !== undefined && hi - lo <= 40n) {
      enumerated++;
      for (let v = lo; v <= hi; v++) ints.push(v);
    } else {
      const a = lo ?? (hi ?? 0n) - 10n ** 30n, b = hi ?? (lo ?? 0n) + 10n ** 30n;
      for (let k = 0n; k < 5n; k++) ints.push(a + k, b - k);
      for (let k = 0; k < 8; k++) {
        ints.push(a + BigInt(Math.floor(random() * 1e15)) * (b - a) / 10n ** 15n);
      }
    }
    for (const v of ints) {
      const t = v.toString();
      if (derives(g, t)) ok(valid(r, t) && inContract(r, t), `${what} accepts ${t}`);
      else ok(!(valid(r, t) && inContract(r, t)), `${what} refuses ${t}, which is in range`);
    }
    for (const t of candidates(r, random)) {
      if (derives(g, t)) ok(valid(r, t), `${what} accepts ${t}`);
      else if (canonical(t)) {
        ok(!(valid(r, t) && inContract(r, t)), `${what} refuses ${t}, which is in range`);
      }
    }
  }
  ok(enumerated > 1000 && empty < 2000, `${enumerated} enumerated, ${empty} empty`);
});

Deno.test("multipleOf over 1,000 ranges: exactly the multiples in range", () => {
  const random = prng(37);
  for (let i = 0; i < 1000; i++) {
    const m = 2 + Math.floor(random() * 60);
    const a = Math.floor(random() * 600) - 300, b = a + Math.floor(random() * 400);
    const schema = { type: "integer", multipleOf: m, minimum: a, maximum: b };
    const multiples = Array.from({ length: b - a + 1 }, (_, k) => a + k).filter((v) => v % m === 0);
    const g = compiled({ type: "integer" }, schema);
    if (g === undefined) {
      equal(multiples.length, 0, `${JSON.stringify(schema)} refused`);
      continue;
    }
    for (let v = a - 2; v <= b + 2; v++) {
      equal(
        derives(g, String(v)),
        v >= a && v <= b && v % m === 0,
        `${JSON.stringify(schema)}: ${v}`,
      );
    }
  }
});
