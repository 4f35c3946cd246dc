/**
 * Schemas to unions of shapes (`shape.ts`). A schema object is its own assertions
 * (`keywords.ts`) intersected with each in-place applicator: `$ref` (and `$dynamicRef`,
 * `$recursiveRef`) by the union it names, `allOf` by each, `anyOf` by the union of its branches,
 * `oneOf` likewise when its branches are disjoint (else each branch without the others, by
 * negation), `not` by the negation, `if` by `(if and then) or (not if and else)`,
 * `dependentRequired`/`dependentSchemas` by `(name absent) or (name present and ...)`. Intersection
 * distributes over union, so keywords beside `anyOf` end up in every branch. Then
 * `unevaluatedProperties`/`unevaluatedItems` constrain what that subtree left unevaluated.
 * Each pointer is normalized once; a `$ref` cycle that passes through no property or item (and
 * so never ends) is refused.
 */
import type { Budget } from "./budget.ts";
import { localShape } from "./keywords.ts";
import { negateShape, negRef } from "./negate.ts";
import { keywordOf } from "./pointer.ts";
import { childPointer, SchemaRefusal } from "./refusal.ts";
import type { Doc } from "./resolve.ts";
import {
  ALL,
  ANY,
  type Clause,
  intersect,
  kindOf,
  OBJ,
  type Ref,
  type Shape,
  shape,
  uniqueShapes,
  valueRefs,
} from "./shape.ts";

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** Schemas normalized within one another at most (in-place `$ref`, `allOf`, ... chains). */
const MAX_NESTING = 256;

/** Normalizes the schemas of one document, each pointer once. */
export class Normalizer {
  readonly #memo = new Map<Ref, Shape[]>();
  readonly #active = new Set<Ref>();

  constructor(readonly doc: Doc, readonly budget: Budget) {}

  /** The union for `ref` (a pointer, or `!` and a pointer for its negation). */
  union(ref: Ref): Shape[] {
    const known = this.#memo.get(ref);
    if (known !== undefined) return known;
    if (this.#active.has(ref)) {
      throw new SchemaRefusal(
        "$ref",
        ref.replace(/^!/, ""),
        "a cycle of references through no property or item: the schema never ends",
      );
    }
    if (this.#active.size >= MAX_NESTING) {
      throw new SchemaRefusal(
        "$ref",
        ref.replace(/^!/, ""),
        `references nested more than ${MAX_NESTING} deep in place (Kiln's limit)`,
      );
    }
    this.#active.add(ref);
    try {
      const out = ref.startsWith("!")
        ? this.negate(this.union(ref.slice(1)), { keyword: "not", ptr: ref.slice(1) })
        : this.#schema(ref);
      this.#memo.set(ref, out);
      return out;
    } finally {
      this.#active.delete(ref);
    }
  }

  /** The union of all of `refs` at once (a conjunction). */
  all(refs: readonly Ref[], keyword: string, ptr: string): Shape[] {
    return refs.reduce<Shape[]>((acc, r) => this.product(acc, this.union(r), keyword, ptr), [ANY]);
  }

  /** Every shape of `a` intersected with every shape of `b`. */
  product(a: readonly Shape[], b: readonly Shape[], keyword: string, ptr: string): Shape[] {
    let out: Shape[] = [];
    for (const x of a) {
      for (const y of b) {
        const z = intersect(x, y);
        if (z !== undefined) out.push(z);
      }
      this.budget.shapes(out.length, keyword, ptr);
      if (out.length > 16) out = uniqueShapes(out);
    }
    out = uniqueShapes(out);
    this.budget.shapes(out.length, keyword, ptr);
    this.budget.time(keyword, ptr);
    return out;
  }

  /** The values that fail `union`. */
  negate(union: readonly Shape[], ctx: { keyword: string; ptr: string }): Shape[] {
    return union.reduce<Shape[]>(
      (acc, s) => this.product(acc, negateShape(s, ctx), ctx.keyword, ctx.ptr),
      [ANY],
    );
  }

  #schema(ptr: string): Shape[] {
    const node = this.doc.node(ptr);
    if (node === true) return [ANY];
    if (node === false) return [];
    if (!isObject(node)) {
      throw new SchemaRefusal(keywordOf(ptr), ptr, "expected a schema (an object or a boolean)");
    }
    const at = (k: string) => childPointer(ptr, k);
    if (Array.isArray(node.enum)) this.budget.listed(node.enum.length, "enum", at("enum"));
    let acc: Shape[] = [localShape(node, ptr)];
    const and = (u: readonly Shape[], k: string) => (acc = this.product(acc, u, k, at(k)));
    if (typeof node.$ref === "string") and(this.union(this.doc.resolve(node.$ref, ptr)), "$ref");
    else if (node.$ref !== undefined) this.#bad(ptr, "$ref", "expected a URI reference");
    if (typeof node.$dynamicRef === "string") {
      and(this.union(this.doc.dynamic(node.$dynamicRef, ptr)), "$dynamicRef");
    }
    if (typeof node.$recursiveRef === "string") {
      and(this.union(this.doc.recursive(node.$recursiveRef, ptr)), "$recursiveRef");
    }
    for (const [i] of this.#list(node, ptr, "allOf").entries()) {
      and(this.union(childPointer(at("allOf"), i)), "allOf");
    }
    if (node.anyOf !== undefined) and(this.#anyOf(node, ptr, "anyOf"), "anyOf");
    if (node.oneOf !== undefined) and(this.#oneOf(node, ptr), "oneOf");
    if (node.not !== undefined) and(this.union(negRef(at("not"))), "not");
    if (node.if !== undefined && (node.then !== undefined || node.else !== undefined)) {
      and(this.#if(node, ptr), "if");
    }
    for (const [k, u] of this.#dependencies(node, ptr)) and(u, k);
    return this.#unevaluated(node, ptr, acc);
  }

  #bad(ptr: string, k: string, why: string): never {
    throw new SchemaRefusal(k, childPointer(ptr, k), why);
  }

  #list(node: Obj, ptr: string, k: string): unknown[] {
    const v = node[k];
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.length === 0) {
      this.#bad(ptr, k, "expected a non-empty list of schemas");
    }
    return v;
  }

  #anyOf(node: Obj, ptr: string, k: string): Shape[] {
    const at = childPointer(ptr, k);
    const out = uniqueShapes(
      this.#list(node, ptr, k).flatMap((_, i) => this.union(childPointer(at, i))),
    );
    this.budget.shapes(out.length, k, at);
    return out;
  }

  /** `oneOf`: the union when the branches are disjoint, else each branch minus the others. */
  #oneOf(node: Obj, ptr: string): Shape[] {
    const at = childPointer(ptr, "oneOf");
    const branches = this.#list(node, ptr, "oneOf").map((_, i) => this.union(childPointer(at, i)));
    const disjoint = branches.every((a, i) =>
      branches.every((b, j) => j <= i || a.every((x) => b.every((y) => this.disjoint(x, y, 2))))
    );
    if (disjoint) return this.#anyOf(node, ptr, "oneOf");
    const out = branches.flatMap((b, i) =>
      branches.reduce<Shape[]>(
        (acc, other, j) =>
          j === i
            ? acc
            : this.product(acc, this.negate(other, { keyword: "oneOf", ptr: at }), "oneOf", at),
        b,
      )
    );
    this.budget.shapes(out.length, "oneOf", at);
    return out;
  }

  /**
   * Whether no value satisfies both `a` and `b`, as far as can be shown from their types, listed
   * values, bounds and, `depth` levels down, a required property whose schemas (from both)
   * nothing satisfies: enough for `oneOf`s whose branches differ in type or in a discriminating
   * property's `const`.
   */
  disjoint(a: Shape, b: Shape, depth: number): boolean {
    const s = intersect(a, b);
    return s === undefined || this.#empty(s, depth);
  }

  #empty(s: Shape, depth: number): boolean {
    if (s.values !== undefined && s.values.every((v) => (kindOf(v) & s.kinds) === 0)) return true;
    if (s.kinds !== OBJ || depth === 0) return false;
    for (const n of s.required) {
      const refs = valueRefs(s, n);
      if (refs.length === 0) continue;
      try {
        if (this.all(refs, "oneOf", refs[0]!).every((x) => this.#empty(x, depth - 1))) return true;
      } catch (e) {
        if (!(e instanceof SchemaRefusal)) throw e; // not shown here (a cycle under way, say)
      }
    }
    return false;
  }

  #if(node: Obj, ptr: string): Shape[] {
    const at = (k: string) => childPointer(ptr, k);
    const cond = this.union(at("if"));
    const then = node.then === undefined ? [ANY] : this.union(at("then"));
    const otherwise = node.else === undefined ? [ANY] : this.union(at("else"));
    return [
      ...this.product(cond, then, "then", at("then")),
      ...this.product(
        this.negate(cond, { keyword: "if", ptr: at("if") }),
        otherwise,
        "else",
        at("else"),
      ),
    ];
  }

  /** `dependentRequired`, `dependentSchemas` and draft 7's `dependencies`, each as a union. */
  #dependencies(node: Obj, ptr: string): [string, Shape[]][] {
    const out: [string, Shape[]][] = [];
    for (const k of ["dependentRequired", "dependentSchemas", "dependencies"]) {
      const v = node[k];
      if (v === undefined) continue;
      if (!isObject(v)) this.#bad(ptr, k, "expected an object");
      for (const [name, dep] of Object.entries(v)) {
        const here = childPointer(childPointer(ptr, k), name);
        const absent = shape(OBJ, { absent: new Set([name]) });
        const others = shape(ALL & ~OBJ);
        let present: Shape[];
        if (Array.isArray(dep) && k !== "dependentSchemas") {
          if (!dep.every((x) => typeof x === "string")) {
            this.#bad(ptr, k, "expected lists of names");
          }
          present = [shape(OBJ, { required: new Set([name, ...dep as string[]]) })];
        } else if (k !== "dependentRequired") {
          present = this.product(
            [shape(OBJ, { required: new Set([name]) })],
            this.union(here),
            k,
            here,
          );
        } else this.#bad(ptr, k, "expected lists of names");
        out.push([k, [others, absent, ...present]]);
      }
    }
    return out;
  }

  /** `unevaluatedProperties` / `unevaluatedItems` on each of `acc` (this subtree's shapes). */
  #unevaluated(node: Obj, ptr: string, acc: Shape[]): Shape[] {
    if (node.unevaluatedProperties !== undefined) {
      const refs = [childPointer(ptr, "unevaluatedProperties")];
      acc = acc.map((s) => {
        if (s.clauses.some((c) => c.kind === "additional")) return s; // every name evaluated
        const declared = new Set([...s.props].filter(([, p]) => p.evaluated).map(([n]) => n));
        const clause: Clause = {
          declared,
          patterns: s.patternProps.map((p) => p.v.re),
          refs,
          kind: "unevaluated",
        };
        return { ...s, clauses: [...s.clauses, clause] };
      });
    }
    if (node.unevaluatedItems !== undefined) {
      const refs = [childPointer(ptr, "unevaluatedItems")];
      acc = acc.map((s) =>
        s.tails.some((t) => t.kind === "items") ? s : {
          ...s,
          tails: [...s.tails, { from: s.prefix.length, refs, kind: "unevaluated" as const }],
        }
      );
    }
    return acc;
  }
}
