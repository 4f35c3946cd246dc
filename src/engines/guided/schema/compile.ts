/**
 * Kiln's JSON Schema (2020-12) compiler: a schema to EBNF text in XGrammar's dialect (start rule
 * `root`) whose strings are JSON texts the schema accepts, compact as Kiln writes JSON (`", "`
 * between items, `": "` after keys, no other whitespace). Every keyword is enforced exactly or
 * refused with a {@linkcode SchemaRefusal} naming it and where it is (`docs/json_schema.md` lists
 * them); the grammar may leave out valid texts (object keys in a fixed order, numbers without
 * exponents, properties not described), never accept an invalid one.
 *
 * Each subschema (a set of pointers, taken together) becomes one rule, its normalized shapes
 * (`normalize.ts`) the rule's alternatives: `null`, booleans, numbers (`numbers.ts`), strings (the
 * string side: `strings.ts`), arrays (`arrays.ts`), objects (`objects.ts`), or the values listed
 * by `const`/`enum` that satisfy the rest. What it may spend is bounded (`budget.ts`).
 */
import { Checker } from "./accepts.ts";
import { arrayExpr } from "./arrays.ts";
import { Budget, LIMITS, type Limits } from "./budget.ts";
import type { Context } from "./context.ts";
import { alt, type Expr, Grammar, lit, raw, seq } from "./grammar.ts";
import { Normalizer } from "./normalize.ts";
import { numberExpr } from "./numbers.ts";
import { objectExpr } from "./objects.ts";
import { keywordOf } from "./pointer.ts";
import { SchemaRefusal } from "./refusal.ts";
import { Doc } from "./resolve.ts";
import {
  ARR,
  BOOL,
  distinct,
  kindOf,
  listed,
  NULL,
  NUM,
  OBJ,
  type Ref,
  type Shape,
  STR,
} from "./shape.ts";
import { jsonStringExpr } from "./strings.ts";

/**
 * `schema` (a JSON Schema: an object or a boolean) as EBNF text with a `root` rule;
 * `SchemaRefusal` for a keyword Kiln cannot enforce exactly, a malformed one, a schema no JSON
 * value satisfies, or one past `limits`.
 */
export function compileSchema(schema: unknown, limits: Limits = LIMITS): string {
  const budget = new Budget(limits);
  const c = new Compiler(new Doc(schema, limits), budget);
  const root = c.child([""], "schema");
  c.defineAll();
  // Rules were counted as they were made; repetitions are counted as written.
  const text = c.g.text(root, (_, repeats) => budget.repeats(repeats, "schema", ""));
  if (text === undefined) {
    throw new SchemaRefusal(
      "schema",
      "",
      "no JSON value satisfies it (its keywords contradict each other, or it never ends)",
    );
  }
  budget.text(text.length);
  return text;
}

class Compiler implements Context {
  readonly g = new Grammar();
  readonly norm: Normalizer;
  readonly checker: Checker;
  readonly #rules = new Map<string, Expr>();
  readonly #pending: [number, Ref[]][] = [];

  constructor(readonly doc: Doc, readonly budget: Budget) {
    this.norm = new Normalizer(doc, budget);
    this.checker = new Checker(this.norm);
  }

  child(refs: readonly Ref[], hint: string): Expr {
    const set = [...new Set(refs)].sort();
    const key = JSON.stringify(set);
    const known = this.#rules.get(key);
    if (known !== undefined) return known;
    const id = this.g.rule(hintOf(set[0] ?? hint));
    const ref: Expr = { k: "ref", id };
    this.#rules.set(key, ref);
    this.#pending.push([id, set]);
    return ref;
  }

  /** Define the rules `child` made, and those they make in turn (a work list: no deep recursion). */
  defineAll(): void {
    for (let next = this.#pending.shift(); next !== undefined; next = this.#pending.shift()) {
      const [id, set] = next;
      const ptr = set[0]?.replace(/^!/, "") ?? "";
      this.budget.rules(1, keywordOf(ptr), ptr);
      const shapes = this.norm.all(set, keywordOf(ptr), ptr);
      this.g.define(id, alt(...shapes.map((s) => this.#shape(s, ptr))));
    }
  }

  finiteValues(
    refs: readonly Ref[],
    max: number,
    keyword: string,
    ptr: string,
  ): unknown[] | undefined {
    const out: unknown[] = [];
    for (const s of this.norm.all(refs, keyword, ptr)) {
      const vals = s.values ?? [
        ...(s.kinds & NULL ? [null] : []),
        ...(s.kinds & BOOL ? [true, false] : []),
      ];
      if (s.values === undefined && (s.kinds & ~(NULL | BOOL)) !== 0) return undefined;
      if (vals.length > max * 4) return undefined;
      out.push(...vals.filter((v) => this.checker.shape(s, v)));
    }
    const all = distinct(out);
    return all.length > max ? undefined : all;
  }

  valueText(v: unknown): Expr {
    // As literals (not opaque text), so that a list of values is written as a trie.
    if (typeof v === "string") return lit(JSON.stringify(v));
    if (Array.isArray(v)) {
      return seq(
        lit("["),
        ...v.flatMap((x, i) => [lit(i > 0 ? ", " : ""), this.valueText(x)]),
        lit("]"),
      );
    }
    if (typeof v === "object" && v !== null) {
      const parts = Object.entries(v).flatMap(([k, x], i) => [
        lit(i > 0 ? ", " : ""),
        lit(JSON.stringify(k)),
        lit(": "),
        this.valueText(x),
      ]);
      return seq(lit("{"), ...parts, lit("}"));
    }
    return lit(JSON.stringify(v));
  }

  anyString(ptr: string): Expr {
    return raw(jsonStringExpr(this.g.rules, {}, ptr));
  }

  /** The texts of the values `s` allows. */
  #shape(s: Shape, ptr: string): Expr {
    if (s.values !== undefined) {
      this.budget.values(s.values.length, "enum", ptr);
      const vals = distinct(s.values).filter((v) => this.checker.shape(s, v));
      return alt(...vals.map((v) => this.valueText(v)));
    }
    const excluded = (k: number) => s.notValues.filter((n) => (kindOf(n.v) & k) !== 0);
    const refuseExcluded = (k: number) => {
      const n = excluded(k)[0];
      if (n !== undefined) {
        throw new SchemaRefusal(
          keywordOf(n.ptr),
          n.ptr,
          `excludes the value ${JSON.stringify(n.v)} from ${
            kindName(k)
          }s: Kiln excludes values from ` +
            `null, booleans and numbers only, or from a listed enum`,
        );
      }
    };
    const parts: Expr[] = [];
    if (s.kinds & NULL && excluded(NULL).length === 0) parts.push(lit("null"));
    if (s.kinds & BOOL) {
      for (const b of [true, false]) {
        if (!listed(excluded(BOOL).map((n) => n.v), b)) parts.push(lit(String(b)));
      }
    }
    if (s.kinds & NUM) parts.push(numberExpr(this.g, s, this.budget, ptr));
    if (s.kinds & STR) {
      refuseExcluded(STR);
      parts.push(this.#string(s, ptr));
    }
    if (s.kinds & ARR) {
      refuseExcluded(ARR);
      parts.push(arrayExpr(this, s, ptr));
    }
    if (s.kinds & OBJ) {
      refuseExcluded(OBJ);
      parts.push(objectExpr(this, s, ptr));
    }
    return alt(...parts);
  }

  #string(s: Shape, ptr: string): Expr {
    const one = (list: readonly { v: string; ptr: string }[], keyword: string) => {
      const distinct = [...new Set(list.map((x) => x.v))];
      if (distinct.length > 1) {
        throw new SchemaRefusal(
          keyword,
          list.find((x) => x.v !== distinct[0])!.ptr,
          `two different ${keyword}s on one string (merged by allOf or $ref): Kiln enforces one`,
        );
      }
      return distinct[0];
    };
    const pattern = one(s.patterns, "pattern"), format = one(s.formats, "format");
    const where = s.patterns[0]?.ptr ?? s.formats[0]?.ptr;
    const at = where === undefined ? ptr : where.slice(0, where.lastIndexOf("/"));
    return raw(jsonStringExpr(this.g.rules, {
      ...(pattern === undefined ? {} : { pattern }),
      ...(format === undefined ? {} : { format }),
      ...(s.minLength > 0 ? { minLength: s.minLength } : {}),
      ...(s.maxLength === undefined ? {} : { maxLength: s.maxLength }),
    }, at));
  }
}

/** A rule name hint from a pointer (its last two segments). */
function hintOf(ptr: string): string {
  const segs = ptr.replace(/^!/, "not_").split("/").filter((x) => x !== "");
  return segs.slice(-2).join("_") || "schema";
}

function kindName(k: number): string {
  return k === STR ? "string" : k === ARR ? "array" : "object";
}
