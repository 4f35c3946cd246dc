/**
 * Negation of a normalized schema, exact or refused. A value fails a shape when its type is not
 * among the shape's, or it is of one of them and fails one of the constraints on that type; each
 * such failure is again a shape (a failed `minimum: 3` is `exclusiveMaximum: 3` on numbers, a
 * failed `required: [a]` is `a` absent, a failed `properties: {a: S}` is `a` present and not
 * `S`, a failed `enum` is the values excluded). Constraints with no exact opposite here
 * (`multipleOf`, `pattern`, `format`, item and name schemas, `additionalProperties`, ...) are
 * refused. A union's negation is the product of its shapes' negations.
 */
import { keywordOf } from "./pointer.ts";
import { SchemaRefusal } from "./refusal.ts";
import { ALL, ARR, kindOf, NUM, OBJ, type Ref, type Shape, shape, STR, tidy } from "./shape.ts";

/** `r` negated (`!p` for `p`, `p` for `!p`). */
export const negRef = (r: Ref): Ref => (r.startsWith("!") ? r.slice(1) : `!${r}`);

/** Where the negation is asked for: refusals name it. */
export interface NegContext {
  keyword: string;
  ptr: string;
}

/** The shapes of the values that fail `s`. */
export function negateShape(s: Shape, ctx: NegContext): Shape[] {
  const refuse = (inner: string, at?: string): never => {
    throw new SchemaRefusal(
      ctx.keyword,
      ctx.ptr,
      `needs the negation of ${inner}${
        at === undefined ? "" : ` (at #${at})`
      }, which Kiln cannot write exactly`,
    );
  };
  const out: Shape[] = [];
  const add = (kinds: number, more: Partial<Shape>) => {
    const t = tidy(shape(kinds & s.kinds, more));
    if (t !== undefined && t.kinds !== 0) out.push(t);
  };
  if ((ALL & ~s.kinds) !== 0) out.push(shape(ALL & ~s.kinds));
  if (s.values !== undefined) add(ALL, { notValues: s.values.map((v) => ({ v, ptr: ctx.ptr })) });
  for (const nv of s.notValues) add(kindOf(nv.v), { values: [nv.v] });
  if (s.lo !== undefined) add(NUM, { hi: { v: s.lo.v, excl: !s.lo.excl } });
  if (s.hi !== undefined) add(NUM, { lo: { v: s.hi.v, excl: !s.hi.excl } });
  if (s.multipleOf.length > 0) refuse("multipleOf", s.multipleOf[0]!.ptr);
  if (s.minLength > 0) add(STR, { maxLength: s.minLength - 1 });
  if (s.maxLength !== undefined) add(STR, { minLength: s.maxLength + 1 });
  if (s.patterns.length > 0) refuse("pattern", s.patterns[0]!.ptr);
  if (s.formats.length > 0) refuse("format", s.formats[0]!.ptr);
  const items = [
    ...s.prefix.flat(),
    ...s.tails.flatMap((t) => t.refs),
    ...s.contains.flatMap((c) => c.refs),
  ];
  if (items.length > 0) refuse(keywordOf(items[0]!), items[0]!.replace(/^!/, ""));
  if (s.unique !== undefined) refuse("uniqueItems", s.unique);
  if (s.minItems > 0) add(ARR, { maxItems: s.minItems - 1 });
  if (s.maxItems !== undefined) add(ARR, { minItems: s.maxItems + 1 });
  for (const n of s.required) add(OBJ, { absent: new Set([n]) });
  for (const n of s.absent) add(OBJ, { required: new Set([n]) });
  for (const [n, p] of s.props) {
    for (const r of p.refs) {
      add(OBJ, {
        required: new Set([n]),
        props: new Map([[n, { refs: [negRef(r)], evaluated: false }]]),
      });
    }
  }
  if (s.clauses.length > 0) {
    refuse(s.clauses[0]!.kind === "additional" ? "additionalProperties" : "unevaluatedProperties");
  }
  if (s.patternProps.length > 0) refuse("patternProperties", s.patternProps[0]!.ptr);
  if (s.names.length > 0) refuse("propertyNames", s.names[0]!.replace(/^!/, ""));
  if (s.minProps > 0) add(OBJ, { maxProps: s.minProps - 1 });
  if (s.maxProps !== undefined) add(OBJ, { minProps: s.maxProps + 1 });
  return out;
}
