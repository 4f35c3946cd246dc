/**
 * A schema in the compiler's normal form: a union of shapes, each a conjunction of constraints
 * sorted by the JSON type they bear on. A value satisfies a shape when its type is among the
 * shape's `kinds` and it meets the constraints for that type (a `minimum` says nothing about a
 * string, as in JSON Schema). Subschemas stay references (`Ref`: a JSON Pointer into the document,
 * `!` before it for the negation), compiled to rules of their own, so recursive schemas stay
 * finite. Intersection is exact; a type whose constraints contradict each other is dropped.
 */

/** JSON types as bits (`integer`: numbers with an integer value; `FRAC`: the others). */
export const NULL = 1, BOOL = 2, INT = 4, FRAC = 8, STR = 16, ARR = 32, OBJ = 64;
/** Every number. */
export const NUM = INT | FRAC;
/** Every JSON type. */
export const ALL = 127;

/** A subschema: the JSON Pointer of its place in the document, `!` first for its negation. */
export type Ref = string;

/** A bound of a number, with the pointer of the schema it is from. */
export interface Bound {
  readonly v: number;
  readonly excl: boolean;
}

/** Something kept with where it came from, for refusals. */
export interface At<T> {
  readonly v: T;
  readonly ptr: string;
}

/** Items at index `from` and past must satisfy `refs` (`items`, or `unevaluatedItems`). */
export interface Tail {
  readonly from: number;
  readonly refs: readonly Ref[];
  readonly kind: "items" | "unevaluated";
}

/** `contains` with its counts. */
export interface Contains {
  readonly refs: readonly Ref[];
  readonly min: number;
  readonly max: number | undefined;
  readonly ptr: string;
}

/**
 * Names not in `declared` and matching none of `patterns` must satisfy `refs`:
 * `additionalProperties`, or `unevaluatedProperties` (then `declared` are the evaluated names).
 */
export interface Clause {
  readonly declared: ReadonlySet<string>;
  readonly patterns: readonly string[];
  readonly refs: readonly Ref[];
  readonly kind: "additional" | "unevaluated";
}

/** A declared property: its value's subschemas, and whether a passing subschema evaluated it. */
export interface Prop {
  readonly refs: readonly Ref[];
  readonly evaluated: boolean;
}

/** One conjunction. */
export interface Shape {
  readonly kinds: number;
  /** The allowed values (from `const`/`enum`), if listed; each still checked against the rest. */
  readonly values?: readonly unknown[];
  readonly notValues: readonly At<unknown>[];
  readonly lo?: Bound;
  readonly hi?: Bound;
  readonly multipleOf: readonly At<number>[];
  readonly minLength: number;
  readonly maxLength?: number;
  readonly patterns: readonly At<string>[];
  readonly formats: readonly At<string>[];
  readonly prefix: readonly (readonly Ref[])[];
  readonly tails: readonly Tail[];
  readonly minItems: number;
  readonly maxItems?: number;
  readonly contains: readonly Contains[];
  readonly unique?: string;
  readonly props: ReadonlyMap<string, Prop>;
  readonly required: ReadonlySet<string>;
  readonly absent: ReadonlySet<string>;
  readonly clauses: readonly Clause[];
  readonly patternProps: readonly At<{ re: string; refs: readonly Ref[] }>[];
  readonly names: readonly Ref[];
  readonly minProps: number;
  readonly maxProps?: number;
  /** Whether a `properties` keyword was given (even `{}`): the object's properties are described. */
  readonly described: boolean;
}

/** Any value. */
export const ANY: Shape = {
  kinds: ALL,
  notValues: [],
  multipleOf: [],
  minLength: 0,
  patterns: [],
  formats: [],
  prefix: [],
  tails: [],
  minItems: 0,
  contains: [],
  props: new Map(),
  required: new Set(),
  absent: new Set(),
  clauses: [],
  patternProps: [],
  names: [],
  minProps: 0,
  described: false,
};

/** `ANY` with `kinds` and the fields of `more`. */
export function shape(kinds: number, more: Partial<Shape> = {}): Shape {
  return { ...ANY, kinds, ...more };
}

/** Structural equality of JSON values (numbers by value, object keys in any order). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => jsonEqual(x, bb[i]));
  }
  const ka = Object.keys(a), ob = b as Record<string, unknown>;
  return ka.length === Object.keys(ob).length &&
    ka.every((k) => Object.hasOwn(ob, k) && jsonEqual((a as Record<string, unknown>)[k], ob[k]));
}

/** A text equal for structurally equal JSON values (object keys sorted). */
export function jsonKey(v: unknown): string {
  return JSON.stringify(
    v,
    (_, x) =>
      typeof x === "object" && x !== null && !Array.isArray(x)
        ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, x[k]]))
        : x,
  );
}

/** `values` without repeats (structurally), in order. */
export function distinct(values: readonly unknown[]): unknown[] {
  const seen = new Set<string>();
  return values.filter((v) => {
    const k = jsonKey(v);
    return seen.has(k) ? false : (seen.add(k), true);
  });
}

/** Whether `v` is among `values` (structurally). */
export const listed = (values: readonly unknown[], v: unknown): boolean =>
  values.some((w) => jsonEqual(v, w));

/** The tighter of two lower (`side` 1) or upper (`side` -1) bounds. */
function tighter(a: Bound | undefined, b: Bound | undefined, side: 1 | -1): Bound | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  if (a.v === b.v) return a.excl ? a : b;
  return (a.v - b.v) * side > 0 ? a : b;
}

const minOf = (a: number | undefined, b: number | undefined) =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b);

function mergeProps(a: ReadonlyMap<string, Prop>, b: ReadonlyMap<string, Prop>): Map<string, Prop> {
  const out = new Map(a);
  for (const [k, p] of b) {
    const q = out.get(k);
    out.set(
      k,
      q === undefined ? p : {
        refs: [...q.refs, ...p.refs],
        evaluated: q.evaluated || p.evaluated,
      },
    );
  }
  return out;
}

function mergePrefix(a: readonly (readonly Ref[])[], b: readonly (readonly Ref[])[]): Ref[][] {
  return Array.from(
    { length: Math.max(a.length, b.length) },
    (_, i) => [...a[i] ?? [], ...b[i] ?? []],
  );
}

/** `a` and `b` both (undefined when nothing satisfies both). */
export function intersect(a: Shape, b: Shape): Shape | undefined {
  let values = a.values;
  if (b.values !== undefined) {
    const keys = new Set(b.values.map(jsonKey));
    values = values === undefined ? b.values : values.filter((v) => keys.has(jsonKey(v)));
  }
  const s: Shape = {
    kinds: a.kinds & b.kinds,
    ...(values !== undefined ? { values } : {}),
    notValues: [...a.notValues, ...b.notValues],
    ...maybe("lo", tighter(a.lo, b.lo, 1)),
    ...maybe("hi", tighter(a.hi, b.hi, -1)),
    multipleOf: [...a.multipleOf, ...b.multipleOf],
    minLength: Math.max(a.minLength, b.minLength),
    ...maybe("maxLength", minOf(a.maxLength, b.maxLength)),
    patterns: [...a.patterns, ...b.patterns],
    formats: [...a.formats, ...b.formats],
    prefix: mergePrefix(a.prefix, b.prefix),
    tails: [...a.tails, ...b.tails],
    minItems: Math.max(a.minItems, b.minItems),
    ...maybe("maxItems", minOf(a.maxItems, b.maxItems)),
    contains: [...a.contains, ...b.contains],
    ...maybe("unique", a.unique ?? b.unique),
    props: mergeProps(a.props, b.props),
    required: new Set([...a.required, ...b.required]),
    absent: new Set([...a.absent, ...b.absent]),
    clauses: [...a.clauses, ...b.clauses],
    patternProps: [...a.patternProps, ...b.patternProps],
    names: [...a.names, ...b.names],
    minProps: Math.max(a.minProps, b.minProps),
    ...maybe("maxProps", minOf(a.maxProps, b.maxProps)),
    described: a.described || b.described,
  };
  return tidy(s);
}

/** `{[key]: v}` when `v` is defined, else `{}` (for optional fields under exact types). */
export function maybe<K extends string, V>(key: K, v: V | undefined): { [P in K]?: V } {
  return (v === undefined ? {} : { [key]: v }) as { [P in K]?: V };
}

/** `s` with the types whose own constraints contradict dropped; undefined when none is left. */
export function tidy(s: Shape): Shape | undefined {
  let kinds = s.kinds;
  if (s.lo !== undefined && s.hi !== undefined) {
    if (s.lo.v > s.hi.v || (s.lo.v === s.hi.v && (s.lo.excl || s.hi.excl))) kinds &= ~NUM;
  }
  if (s.maxLength !== undefined && s.minLength > s.maxLength) kinds &= ~STR;
  if (s.maxItems !== undefined && s.minItems > s.maxItems) kinds &= ~ARR;
  if (
    [...s.required].some((n) => s.absent.has(n)) ||
    (s.maxProps !== undefined && (s.minProps > s.maxProps || s.required.size > s.maxProps))
  ) kinds &= ~OBJ;
  if (s.values !== undefined && s.values.length === 0) return undefined;
  if (kinds === 0) return undefined;
  return kinds === s.kinds ? s : { ...s, kinds };
}

/** The JSON type bit of a value. */
export function kindOf(v: unknown): number {
  if (v === null) return NULL;
  switch (typeof v) {
    case "boolean":
      return BOOL;
    case "number":
      return Number.isInteger(v) ? INT : FRAC;
    case "string":
      return STR;
    default:
      return Array.isArray(v) ? ARR : OBJ;
  }
}

/**
 * The subschemas the value of property `name` must satisfy in `s`: its `properties`, the
 * `patternProperties` matching it, and each `additionalProperties` (or unevaluated clause) it
 * is additional to.
 */
export function valueRefs(s: Shape, name: string): Ref[] {
  const refs = [...s.props.get(name)?.refs ?? []];
  const matches = (re: string) => new RegExp(re, "u").test(name);
  for (const p of s.patternProps) if (matches(p.v.re)) refs.push(...p.v.refs);
  for (const cl of s.clauses) {
    if (!cl.declared.has(name) && !cl.patterns.some(matches)) refs.push(...cl.refs);
  }
  return refs;
}

/** A text equal for equal shapes (to drop repeats from a union). */
export function shapeKey(s: Shape): string {
  return JSON.stringify(
    s,
    (_, x) => x instanceof Set ? [...x].sort() : x instanceof Map ? [...x] : x,
  );
}

/** `shapes` without repeats, in order. */
export function uniqueShapes(shapes: readonly Shape[]): Shape[] {
  const seen = new Set<string>();
  return shapes.filter((s) => {
    const k = shapeKey(s);
    return seen.has(k) ? false : (seen.add(k), true);
  });
}
