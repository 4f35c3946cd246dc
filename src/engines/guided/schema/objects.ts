/**
 * An object shape as JSON text: `{"a": 1, "b": 2}` (`", "` between members, `": "` after keys,
 * as Kiln's JSON always is). Its properties come in a fixed order: those of `properties` as
 * declared (merged subschemas in turn), then `required` names no `properties` declares (their
 * value satisfies `additionalProperties`, or anything). Optional ones may be left out; `absent`
 * ones (`properties: {x: false}`, a failed `required` under `not`) never appear. A property's value
 * satisfies its `properties` subschemas, every `additionalProperties` it is additional to, and the
 * `patternProperties` whose regex matches its name.
 *
 * Other names ("additional" properties) are generated only when a merged subschema gives
 * `additionalProperties` (`true` or a schema), or when nothing describes the object's properties
 * at all (no `properties`, even `{}`, no `required`, no `patternProperties`: `{type: "object"}` is
 * any object): Kiln's strict default, so `{properties: {...}}` alone
 * gets only its declared properties (a subset of the valid objects: every one valid). Their names
 * never equal a known one (a duplicate key would replace a declared value), written in printable
 * ASCII without escapes; with `patternProperties` or a `propertyNames` that is not a finite list they are refused.
 * `minProperties` counts declared properties only (duplicate additional names could fall short);
 * `maxProperties` counts all.
 */
import type { Context } from "./context.ts";
import { alt, cls, EMPTY, type Expr, lit, NONE, opt, rep, seq } from "./grammar.ts";
import { type Member, ordered } from "./ordered.ts";
import { SchemaRefusal } from "./refusal.ts";
import { type Ref, type Shape, STR, valueRefs } from "./shape.ts";

/** The JSON texts of the objects `s` allows (`ptr`: where, for refusals). */
export function objectExpr(c: Context, s: Shape, ptr: string): Expr {
  const order = [...s.props.keys(), ...[...s.required].filter((n) => !s.props.has(n))];
  const known = new Set([...order, ...s.absent]);
  const extra = extras(c, s, ptr, known);
  const members: Member[] = [];
  const named = [...order, ...(extra?.listed ?? []).filter((n) => !known.has(n))];
  for (const name of named) {
    if (s.absent.has(name)) continue;
    if (s.names.length > 0 && !c.checker.refs(s.names, name)) {
      if (s.required.has(name)) return NONE;
      continue;
    }
    const refs = extra?.listed?.includes(name) && !known.has(name)
      ? extra.refs
      : valueRefs(s, name);
    const value = c.child(refs, `${ptr}/properties/${name}`);
    members.push({ x: seq(c.valueText(name), lit(": "), value), required: s.required.has(name) });
  }
  const member = extra?.key === undefined
    ? undefined
    : seq(extra.key, lit(": "), c.child(extra.refs, `${ptr}/additionalProperties`));
  const end = (count: number): Expr => {
    if (count < s.minProps) return NONE;
    if (member === undefined) return EMPTY;
    const room = s.maxProps === undefined ? Infinity : s.maxProps - count;
    if (room <= 0) return EMPTY;
    const more = rep(seq(lit(", "), member), 0, room - (count === 0 ? 1 : 0));
    return count === 0 ? opt(seq(member, more)) : more;
  };
  // Additional members can bring the count up to maxProperties only, never up to minProperties.
  const body = ordered(
    c.g,
    members,
    s.minProps,
    s.maxProps,
    end,
    (n) => c.budget.rules(n, "properties", ptr),
    "obj",
  );
  return seq(lit("{"), body, lit("}"));
}

interface Extras {
  /** The name text of an additional property (undefined: none beyond `listed`). */
  key?: Expr;
  /** Names `propertyNames` lists (each then an optional member). */
  listed?: string[];
  refs: Ref[];
}

/** The additional properties `s` allows, or undefined for none. */
function extras(c: Context, s: Shape, ptr: string, known: ReadonlySet<string>): Extras | undefined {
  const explicit = s.clauses.some((cl) => cl.kind === "additional");
  const described = s.described || s.props.size > 0 || s.required.size > 0 ||
    s.absent.size > 0 || s.patternProps.length > 0;
  if (!explicit && described) return undefined;
  const refs = s.clauses.flatMap((cl) => cl.refs);
  if (c.norm.all(refs, "additionalProperties", ptr).length === 0) return undefined;
  const patterns = [...s.patternProps.map((p) => p.ptr), ...s.clauses.flatMap((cl) => cl.patterns)];
  if (patterns.length > 0) {
    throw new SchemaRefusal(
      "patternProperties",
      s.patternProps[0]?.ptr ?? ptr,
      "beside additionalProperties: Kiln cannot generate names that avoid a pattern; " +
        "set additionalProperties to false, or list the names in properties",
    );
  }
  if (s.names.length > 0) {
    const listed = c.finiteValues(s.names, 1_000, "propertyNames", ptr);
    if (listed !== undefined) {
      return { listed: listed.filter((n): n is string => typeof n === "string"), refs };
    }
    const names = c.norm.all(s.names, "propertyNames", ptr);
    const plain = names.some((n) =>
      (n.kinds & STR) !== 0 && n.values === undefined && n.notValues.length === 0 &&
      n.minLength === 0 &&
      n.maxLength === undefined && n.patterns.length === 0 && n.formats.length === 0
    );
    if (!plain) {
      throw new SchemaRefusal(
        "propertyNames",
        s.names[0]!,
        "with additional properties allowed, only a finite list of names (enum/const) is enforced",
      );
    }
  }
  const key = known.size === 0 ? c.anyString(ptr) : keyExcept([...known]);
  return { key, refs };
}

/** A name character written as itself: printable ASCII but `"` and `\`. */
const PLAIN: [number, number][] = [[0x20, 0x21], [0x23, 0x5b], [0x5d, 0x7e]];
const isPlain = (cp: number) => PLAIN.some(([a, b]) => cp >= a && cp <= b);

interface Trie {
  end: boolean;
  next: Map<number, Trie>;
}

/** A JSON string of plain characters equal to none of `names`. */
function keyExcept(names: string[]): Expr {
  const root: Trie = { end: false, next: new Map() };
  for (const name of names) {
    let t = root;
    for (const ch of name) {
      const cp = ch.codePointAt(0)!;
      if (!isPlain(cp)) break; // a plain name never reaches here: nothing to exclude below
      let n = t.next.get(cp);
      if (n === undefined) t.next.set(cp, n = { end: false, next: new Map() });
      t = n;
    }
    if ([...name].every((ch) => isPlain(ch.codePointAt(0)!))) t.end = true;
  }
  const any = rep(cls(...PLAIN), 0, Infinity);
  const walk = (t: Trie): Expr => {
    const others = without(PLAIN, [...t.next.keys()]);
    return alt(
      t.end ? NONE : EMPTY,
      ...[...t.next].map(([cp, n]) => seq(lit(String.fromCodePoint(cp)), walk(n))),
      others.length === 0 ? NONE : seq(cls(...others), any),
    );
  };
  return seq(lit('"'), walk(root), lit('"'));
}

/** `ranges` less the code points `cps`. */
function without(ranges: [number, number][], cps: number[]): [number, number][] {
  let out = ranges;
  for (const cp of cps) {
    out = out.flatMap(([a, b]): [number, number][] =>
      cp < a || cp > b
        ? [[a, b]]
        : [...(a < cp ? [[a, cp - 1]] : []), ...(cp < b ? [[cp + 1, b]] : [])] as [number, number][]
    );
  }
  return out;
}
