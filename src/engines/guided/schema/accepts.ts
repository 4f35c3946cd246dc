/**
 * A validator over normalized shapes, for the values a schema lists (`const`, `enum`): a listed
 * value is written only when it satisfies every other keyword beside it (`{enum: [1, "a"], type:
 * string}` writes `"a"`). Numbers are checked both exactly (decimal) and as a floating-point
 * validator does (`multipleOf` as ajv divides), so a value passes only where both agree. A
 * `format` on a listed string is refused: formats are checked only as strings are generated.
 */
import { cmp, decOf } from "./decimal.ts";
import type { Normalizer } from "./normalize.ts";
import { SchemaRefusal } from "./refusal.ts";
import { ARR, jsonKey, kindOf, listed, NUM, OBJ, type Ref, type Shape, STR } from "./shape.ts";

type Obj = Record<string, unknown>;

/** Whether `v` is an exact multiple of `m` for a decimal and a floating-point validator alike. */
export function isMultiple(v: number, m: number): boolean {
  const q = v / m;
  if (!Number.isFinite(q) || q !== parseInt(String(q), 10)) return false;
  const a = decOf(v), b = decOf(m);
  return (a.m * 10n ** BigInt(b.s)) % (b.m * 10n ** BigInt(a.s)) === 0n;
}

/** `re` as an ECMA-262 regex with the `u` flag, as JSON Schema reads patterns. */
export function regex(re: string, keyword: string, ptr: string): RegExp {
  try {
    return new RegExp(re, "u");
  } catch {
    throw new SchemaRefusal(keyword, ptr, `${JSON.stringify(re)} is not a valid ECMA-262 regex`);
  }
}

/** Checks values against the shapes of one document. */
export class Checker {
  readonly #keys = new WeakMap<readonly unknown[], Set<string>>();

  constructor(readonly norm: Normalizer) {}

  /** Whether `v` is among `values` (a set of their keys, made once per list). */
  #listed(values: readonly unknown[], v: unknown): boolean {
    let keys = this.#keys.get(values);
    if (keys === undefined) this.#keys.set(values, keys = new Set(values.map(jsonKey)));
    return keys.has(jsonKey(v));
  }

  /** Whether `v` satisfies every one of `refs`. */
  refs(refs: readonly Ref[], v: unknown): boolean {
    return refs.every((r) => this.norm.union(r).some((s) => this.shape(s, v)));
  }

  /** Whether `v` satisfies `s`. */
  shape(s: Shape, v: unknown): boolean {
    const k = kindOf(v);
    if ((s.kinds & k) === 0) return false;
    if (s.values !== undefined && !this.#listed(s.values, v)) return false;
    if (listed(s.notValues.map((n) => n.v), v)) return false;
    if (k & NUM) return this.#number(s, v as number);
    if (k === STR) return this.#string(s, v as string);
    if (k === ARR) return this.#array(s, v as unknown[]);
    if (k === OBJ) return this.#object(s, v as Obj);
    return true;
  }

  #number(s: Shape, v: number): boolean {
    const d = decOf(v);
    const ok = (b: { v: number; excl: boolean } | undefined, side: 1 | -1) =>
      b === undefined || (cmp(d, decOf(b.v)) * side > 0 || (!b.excl && v === b.v));
    return ok(s.lo, 1) && ok(s.hi, -1) && s.multipleOf.every((m) => isMultiple(v, m.v));
  }

  #string(s: Shape, v: string): boolean {
    if (s.formats.length > 0) {
      throw new SchemaRefusal(
        "format",
        s.formats[0]!.ptr,
        "on a value Kiln must check rather than write (a listed value, a property name): Kiln " +
          "checks formats only on strings it generates",
      );
    }
    const n = [...v].length;
    if (n < s.minLength || (s.maxLength !== undefined && n > s.maxLength)) return false;
    return s.patterns.every((p) => regex(p.v, "pattern", p.ptr).test(v));
  }

  #array(s: Shape, v: unknown[]): boolean {
    if (v.length < s.minItems || (s.maxItems !== undefined && v.length > s.maxItems)) return false;
    for (const [i, x] of v.entries()) {
      if (!this.refs(s.prefix[i] ?? [], x)) return false;
      if (!s.tails.every((t) => i < t.from || this.refs(t.refs, x))) return false;
    }
    for (const c of s.contains) {
      const n = v.filter((x) => this.refs(c.refs, x)).length;
      if (n < c.min || (c.max !== undefined && n > c.max)) return false;
    }
    return s.unique === undefined ||
      v.every((x, i) => v.every((y, j) => j <= i || !listed([x], y)));
  }

  #object(s: Shape, v: Obj): boolean {
    const keys = Object.keys(v);
    if (keys.length < s.minProps || (s.maxProps !== undefined && keys.length > s.maxProps)) {
      return false;
    }
    if ([...s.required].some((n) => !Object.hasOwn(v, n))) return false;
    if ([...s.absent].some((n) => Object.hasOwn(v, n))) return false;
    for (const key of keys) {
      const x = v[key];
      if (!this.refs(s.props.get(key)?.refs ?? [], x)) return false;
      if (!this.refs(s.names, key)) return false;
      for (const p of s.patternProps) {
        if (regex(p.v.re, "patternProperties", p.ptr).test(key) && !this.refs(p.v.refs, x)) {
          return false;
        }
      }
      for (const c of s.clauses) {
        const matched = c.declared.has(key) ||
          c.patterns.some((re) => regex(re, "patternProperties", "").test(key));
        if (!matched && !this.refs(c.refs, x)) return false;
      }
    }
    return true;
  }
}
