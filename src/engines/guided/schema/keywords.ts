/**
 * A schema object's own assertions read into a {@linkcode Shape}: `type`, `const`, `enum`, the
 * number, string, array and object keywords. Subschemas stay pointers. A keyword whose value is
 * malformed is refused by name. The applicators that combine schemas (`$ref`, `allOf`, `anyOf`,
 * `oneOf`, `not`, `if`, `dependent*`, `unevaluated*`) are `normalize.ts`'s.
 */
import { childPointer, SchemaRefusal } from "./refusal.ts";
import {
  ALL,
  ARR,
  type At,
  BOOL,
  type Bound,
  type Clause,
  type Contains,
  INT,
  jsonEqual,
  maybe,
  NULL,
  NUM,
  OBJ,
  type Prop,
  type Ref,
  type Shape,
  shape,
  STR,
  type Tail,
} from "./shape.ts";

/**
 * Keywords that do not bear on validity, ignored: 2020-12's meta-data and content vocabularies
 * (content is annotation-only in 2020-12), `$comment`, `$schema`, `$vocabulary`, OpenAPI's.
 */
export const ANNOTATIONS = [
  "title",
  "description",
  "default",
  "examples",
  "deprecated",
  "readOnly",
  "writeOnly",
  "$comment",
  "$schema",
  "$vocabulary",
  "contentEncoding",
  "contentMediaType",
  "contentSchema",
  "example",
  "discriminator",
  "externalDocs",
  "xml",
];

const TYPES: Record<string, number> = {
  null: NULL,
  boolean: BOOL,
  integer: INT,
  number: NUM,
  string: STR,
  array: ARR,
  object: OBJ,
};

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** Reads keywords of one schema object, refusing malformed ones by name. */
class Reader {
  constructor(readonly s: Obj, readonly ptr: string) {}

  has(k: string): boolean {
    return this.s[k] !== undefined;
  }

  bad(k: string, why: string): never {
    throw new SchemaRefusal(k, childPointer(this.ptr, k), why);
  }

  number(k: string): number | undefined {
    const v = this.s[k];
    if (v === undefined) return undefined;
    if (typeof v !== "number" || !Number.isFinite(v)) this.bad(k, "expected a number");
    return v;
  }

  count(k: string): number | undefined {
    const v = this.s[k];
    if (v === undefined) return undefined;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
      this.bad(k, "expected a non-negative integer");
    }
    return v;
  }

  string(k: string): string | undefined {
    const v = this.s[k];
    if (v === undefined) return undefined;
    if (typeof v !== "string") this.bad(k, "expected a string");
    return v;
  }

  map(k: string): Obj | undefined {
    const v = this.s[k];
    if (v === undefined) return undefined;
    if (!isObject(v)) this.bad(k, "expected an object");
    return v;
  }

  names(k: string): string[] | undefined {
    const v = this.s[k];
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) {
      this.bad(k, "expected a list of strings");
    }
    return v as string[];
  }

  at(k: string, ...more: (string | number)[]): Ref {
    return more.reduce<string>((p, m) => childPointer(p, m), childPointer(this.ptr, k));
  }
}

/** The shape of `s`'s own assertions (`s` at `ptr`). */
export function localShape(s: Obj, ptr: string): Shape {
  const r = new Reader(s, ptr);
  return shape(kinds(r), {
    ...values(r),
    ...numbers(r),
    ...strings(r),
    ...arrays(r),
    ...objects(r),
  });
}

function kinds(r: Reader): number {
  const t = r.s.type;
  if (t === undefined) return ALL;
  const list = Array.isArray(t) ? t : [t];
  let k = 0;
  for (const name of list) {
    if (typeof name !== "string" || !Object.hasOwn(TYPES, name)) {
      r.bad(
        "type",
        `unknown type ${JSON.stringify(name)} (known: ${Object.keys(TYPES).join(", ")})`,
      );
    }
    k |= TYPES[name]!;
  }
  // OpenAPI 3.0's `nullable: true` adds null to the schema's `type` (as ajv reads it).
  if (r.s.nullable === true) k |= NULL;
  return k;
}

function values(r: Reader): Partial<Shape> {
  let vals: readonly unknown[] | undefined;
  if (r.has("enum")) {
    if (!Array.isArray(r.s.enum)) r.bad("enum", "expected a list of values");
    vals = r.s.enum as unknown[];
  }
  if (r.has("const")) {
    const c = r.s.const;
    vals = vals === undefined || vals.some((v) => jsonEqual(v, c)) ? [c] : [];
  }
  return vals === undefined ? {} : { values: vals };
}

function bound(r: Reader, side: "minimum" | "maximum"): Bound | undefined {
  const exclusive = side === "minimum" ? "exclusiveMinimum" : "exclusiveMaximum";
  const v = r.number(side);
  const x = r.s[exclusive];
  const out: Bound[] = [];
  if (typeof x === "boolean") {
    // Draft 4: a boolean `exclusive*` makes `minimum`/`maximum` exclusive.
    if (v !== undefined) out.push({ v, excl: x });
  } else {
    if (v !== undefined) out.push({ v, excl: false });
    const e = r.number(exclusive);
    if (e !== undefined) out.push({ v: e, excl: true });
  }
  const up = side === "minimum" ? 1 : -1;
  return out.reduce<Bound | undefined>(
    (a, b) => a === undefined ? b : a.v === b.v ? (a.excl ? a : b) : (a.v - b.v) * up > 0 ? a : b,
    undefined,
  );
}

function numbers(r: Reader): Partial<Shape> {
  const m = r.number("multipleOf");
  if (m !== undefined && m <= 0) r.bad("multipleOf", "expected a number above 0");
  const mult: At<number>[] = m === undefined ? [] : [{ v: m, ptr: r.at("multipleOf") }];
  return {
    ...maybe("lo", bound(r, "minimum")),
    ...maybe("hi", bound(r, "maximum")),
    multipleOf: mult,
  };
}

function strings(r: Reader): Partial<Shape> {
  const pattern = r.string("pattern"), format = r.string("format");
  return {
    minLength: r.count("minLength") ?? 0,
    ...maybe("maxLength", r.count("maxLength")),
    patterns: pattern === undefined ? [] : [{ v: pattern, ptr: r.at("pattern") }],
    formats: format === undefined ? [] : [{ v: format, ptr: r.at("format") }],
  };
}

function arrays(r: Reader): Partial<Shape> {
  let prefix: Ref[][] = [];
  const tails: Tail[] = [];
  if (r.has("prefixItems")) {
    if (!Array.isArray(r.s.prefixItems)) r.bad("prefixItems", "expected a list of schemas");
    prefix = (r.s.prefixItems as unknown[]).map((_, i) => [r.at("prefixItems", i)]);
  }
  if (Array.isArray(r.s.items)) {
    // Drafts before 2020-12: `items` as a list is `prefixItems`; `additionalItems` the rest.
    if (r.has("prefixItems")) r.bad("items", "a list beside prefixItems");
    prefix = r.s.items.map((_, i) => [r.at("items", i)]);
    if (r.has("additionalItems")) {
      tails.push({ from: prefix.length, refs: [r.at("additionalItems")], kind: "items" });
    }
  } else if (r.has("items")) {
    tails.push({ from: prefix.length, refs: [r.at("items")], kind: "items" });
  }
  const contains: Contains[] = [];
  if (r.has("contains")) {
    contains.push({
      refs: [r.at("contains")],
      min: r.count("minContains") ?? 1,
      max: r.count("maxContains"),
      ptr: r.at("contains"),
    });
  }
  const unique = r.s.uniqueItems;
  if (unique !== undefined && typeof unique !== "boolean") {
    r.bad("uniqueItems", "expected a boolean");
  }
  return {
    prefix,
    tails,
    minItems: r.count("minItems") ?? 0,
    ...maybe("maxItems", r.count("maxItems")),
    contains,
    ...maybe("unique", unique === true ? r.at("uniqueItems") : undefined),
  };
}

function objects(r: Reader): Partial<Shape> {
  const props = new Map<string, Prop>();
  for (const name of Object.keys(r.map("properties") ?? {})) {
    props.set(name, { refs: [r.at("properties", name)], evaluated: true });
  }
  const patternProps: At<{ re: string; refs: Ref[] }>[] = [];
  for (const re of Object.keys(r.map("patternProperties") ?? {})) {
    try {
      new RegExp(re, "u");
    } catch {
      r.bad("patternProperties", `${JSON.stringify(re)} is not a valid ECMA-262 regex`);
    }
    const ptr = r.at("patternProperties", re);
    patternProps.push({ v: { re, refs: [ptr] }, ptr });
  }
  const clauses: Clause[] = [];
  if (r.has("additionalProperties")) {
    clauses.push({
      declared: new Set(props.keys()),
      patterns: patternProps.map((p) => p.v.re),
      refs: [r.at("additionalProperties")],
      kind: "additional",
    });
  }
  return {
    props,
    required: new Set(r.names("required") ?? []),
    clauses,
    patternProps,
    names: r.has("propertyNames") ? [r.at("propertyNames")] : [],
    minProps: r.count("minProperties") ?? 0,
    ...maybe("maxProps", r.count("maxProperties")),
    described: r.has("properties"),
  };
}
