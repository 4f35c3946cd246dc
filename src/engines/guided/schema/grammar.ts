/**
 * The schema compiler's grammar before it is text: expressions over literals, classes, rules and
 * opaque EBNF (the string side's), built by the compiler and written out once complete. Writing
 * out first drops what can never finish: a rule that derives no finite string (a required
 * property whose schema is `false`, a `$ref` cycle through required properties, an empty number
 * range) is removed with every alternative that uses it, so the grammar XGrammar gets has no dead
 * end: every prefix it accepts can be completed.
 */
import { type Alt, choice, EMPTY as NO_ALT } from "./choice.ts";
import { charClass, type CodeRange, literal, Rules } from "./ebnf.ts";
import { utf8 } from "./utf8.ts";

/** A grammar expression. */
export type Expr =
  | { readonly k: "lit"; readonly s: string }
  | { readonly k: "cls"; readonly ranges: readonly CodeRange[] }
  | { readonly k: "raw"; readonly text: string }
  | { readonly k: "ref"; readonly id: number }
  | { readonly k: "seq"; readonly xs: readonly Expr[] }
  | { readonly k: "alt"; readonly xs: readonly Expr[] }
  | { readonly k: "rep"; readonly x: Expr; readonly min: number; readonly max: number };

/** The empty string. */
export const EMPTY: Expr = { k: "lit", s: "" };
/** Nothing at all (an alternation of none). */
export const NONE: Expr = { k: "alt", xs: [] };

/** The literal `s`. */
export const lit = (s: string): Expr => ({ k: "lit", s });
/** A class of ASCII ranges (XGrammar reads a class as single bytes). */
export const cls = (...ranges: CodeRange[]): Expr => ({ k: "cls", ranges });
/** An EBNF expression taken as it is (it must derive some finite string). */
export const raw = (text: string): Expr => ({ k: "raw", text });
/** The digits `a` to `b` (characters). */
export const digits = (a: string, b: string): Expr =>
  a === b ? lit(a) : cls([a.charCodeAt(0), b.charCodeAt(0)]);
/** Any digit. */
export const DIGIT: Expr = digits("0", "9");

const isNone = (e: Expr) => e.k === "alt" && e.xs.length === 0;

/** `xs` one after another (nested sequences flattened, adjacent literals joined). */
export function seq(...xs: Expr[]): Expr {
  const out: Expr[] = [];
  for (const x of xs.flatMap((x) => x.k === "seq" ? x.xs : [x])) {
    if (isNone(x)) return NONE;
    if (x.k === "lit" && x.s === "") continue;
    const last = out.at(-1);
    if (x.k === "lit" && last?.k === "lit") out[out.length - 1] = lit(last.s + x.s);
    else out.push(x);
  }
  return out.length === 0 ? EMPTY : out.length === 1 ? out[0]! : { k: "seq", xs: out };
}

/** One of `xs` (nested alternations flattened, nothing dropped, repeats kept once). */
export function alt(...xs: Expr[]): Expr {
  const out: Expr[] = [];
  const seen = new Set<string | Expr>();
  for (const x of xs.flatMap((x) => x.k === "alt" ? x.xs : [x])) {
    // Leaves by value, the rest by identity (deep comparison would cost more than it saves).
    const key = x.k === "lit"
      ? `l${x.s}`
      : x.k === "ref"
      ? `r${x.id}`
      : x.k === "raw"
      ? `x${x.text}`
      : x;
    if (!seen.has(key)) (seen.add(key), out.push(x));
  }
  // Single characters and classes become one class.
  const chars = out.filter(isChar);
  if (chars.length > 1) {
    const ranges = chars.flatMap((x) =>
      x.k === "cls" ? x.ranges : [[x.s.codePointAt(0)!, x.s.codePointAt(0)!] as const]
    );
    const merged = cls(...mergeRanges(ranges));
    const rest = out.filter((x) => !isChar(x));
    return rest.length === 0 ? merged : { k: "alt", xs: [merged, ...rest] };
  }
  return out.length === 1 ? out[0]! : { k: "alt", xs: out };
}

/** A class, or a one-character ASCII literal (XGrammar reads a class as bytes: ASCII only). */
const isChar = (x: Expr): x is Extract<Expr, { k: "cls" | "lit" }> =>
  x.k === "cls" || (x.k === "lit" && x.s.length === 1 && x.s.charCodeAt(0) < 0x80);

/** `ranges` sorted, overlapping and adjacent ones joined. */
function mergeRanges(ranges: readonly CodeRange[]): CodeRange[] {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const [a, b] of sorted) {
    const last = out.at(-1);
    if (last !== undefined && a <= last[1] + 1) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

/** `x` repeated `min` to `max` times (`max` may be Infinity). */
export function rep(x: Expr, min: number, max: number): Expr {
  if (max < min) return NONE;
  if (max === 0) return EMPTY;
  if (isNone(x)) return min === 0 ? EMPTY : NONE;
  if (min === 1 && max === 1) return x;
  if (x.k === "lit" && min === max && x.s.length * min <= 64) return lit(x.s.repeat(min));
  return { k: "rep", x, min, max };
}

/** `x` or nothing. */
export const opt = (x: Expr): Expr => rep(x, 0, 1);

/** Rules being built: each an id, defined once, named by a hint. */
export class Grammar {
  /** The text's rules: the string side adds its own here; this grammar's are written after. */
  readonly rules = new Rules();
  readonly #bodies: (Expr | undefined)[] = [];
  readonly #hints: string[] = [];

  /** A new rule, to be defined with `define`. */
  rule(hint: string): number {
    this.#hints.push(hint);
    return this.#bodies.push(undefined) - 1;
  }

  /** Define rule `id`. */
  define(id: number, body: Expr): void {
    this.#bodies[id] = body;
  }

  /** A rule for `body` at once: a reference to it. */
  named(hint: string, body: Expr): Expr {
    const id = this.rule(hint);
    this.define(id, body);
    return { k: "ref", id };
  }

  /** Rules made so far. */
  get size(): number {
    return this.#bodies.length;
  }

  /**
   * The grammar text with `root` as its start, rules that derive no finite string removed, or
   * `undefined` when `root` derives none. `cost` is told each rule and repetition written.
   */
  text(root: Expr, cost: (rules: number, repeats: number) => void): string | undefined {
    const live = this.#productive();
    const prune = (e: Expr): Expr => {
      switch (e.k) {
        case "ref":
          return live.has(e.id) ? e : NONE;
        case "seq":
          return seq(...e.xs.map(prune));
        case "alt":
          return alt(...e.xs.map(prune).filter((x) => !isNone(x)));
        case "rep":
          return rep(prune(e.x), e.min, e.max);
        default:
          return e;
      }
    };
    const top = prune(root);
    if (isNone(top)) return undefined;
    const rules = this.rules;
    const names = new Map<number, string>();
    const pending: number[] = [];
    let repeats = 0;
    const write = (e: Expr, inner: boolean): string => {
      switch (e.k) {
        case "lit":
          return literal(e.s);
        case "cls":
          return charClass(e.ranges);
        case "raw":
          return inner ? `(${e.text})` : e.text;
        case "ref": {
          let name = names.get(e.id);
          if (name === undefined) {
            name = rules.reserve(this.#hints[e.id]);
            names.set(e.id, name);
            pending.push(e.id);
          }
          return name;
        }
        case "seq": {
          const body = e.xs.map((x) => write(x, true)).join(" ");
          return inner ? `(${body})` : body;
        }
        case "alt":
          return alternation(rules, e.xs, (x) => write(x, false));
        case "rep": {
          repeats += Number.isFinite(e.max) ? e.max : e.min + 1;
          return `${write(e.x, true)}${repetition(e.min, e.max)}`;
        }
      }
    };
    const rootText = write(top, false);
    const bodies: [string, string][] = [];
    for (let id = pending.shift(); id !== undefined; id = pending.shift()) {
      bodies.push([names.get(id)!, write(prune(this.#bodies[id]!), false)]);
      cost(1, 0);
    }
    cost(0, repeats);
    for (const [name, body] of bodies) rules.define(name, body);
    return rules.text(rootText);
  }

  /** The rules that derive a finite string (the least fixpoint). */
  #productive(): Set<number> {
    const live = new Set<number>();
    const ok = (e: Expr): boolean => {
      switch (e.k) {
        case "ref":
          return live.has(e.id);
        case "seq":
          return e.xs.every(ok);
        case "alt":
          return e.xs.some(ok);
        case "rep":
          return e.min === 0 || ok(e.x);
        default:
          return true;
      }
    };
    for (let changed = true; changed;) {
      changed = false;
      this.#bodies.forEach((body, id) => {
        if (!live.has(id) && body !== undefined && ok(body)) (live.add(id), changed = true);
      });
    }
    return live;
  }
}

function repetition(min: number, max: number): string {
  if (max === Infinity) return min === 0 ? "*" : min === 1 ? "+" : `{${min},}`;
  if (min === 0 && max === 1) return "?";
  return min === max ? `{${min}}` : `{${min},${max}}`;
}

/** Every byte: what an alternative whose first edge is not known may start with. */
const ANY_BYTE: ReadonlySet<number> = new Set(Array.from({ length: 256 }, (_, b) => b));

/**
 * `xs` as one alternation XGrammar reads as written (see `choice.ts`): the literals as a trie
 * (so no two of its branches start with the same byte, and a list of thousands of values costs
 * no rule per value), the rest with their first edge where it is a literal or a class.
 */
function alternation(rules: Rules, xs: readonly Expr[], write: (x: Expr) => string): string {
  const texts = xs.flatMap((x) => x.k === "lit" ? [x.s] : []);
  const alts = [...trieAlts(rules, texts)];
  for (const x of xs) {
    if (x.k === "lit") continue;
    const first = x.k === "seq" ? x.xs[0]! : x;
    const text = write(x);
    if (first.k === "lit" && first.s !== "") {
      const b = utf8(first.s.codePointAt(0)!)[0]!;
      alts.push({ text, atom: `b:${b}`, bytes: new Set([b]) });
    } else if (first.k === "cls") {
      const bytes = new Set<number>();
      for (const [lo, hi] of first.ranges) {
        for (let c = lo; c <= Math.min(hi, 0x7f); c++) bytes.add(c);
        if (hi > 0x7f) { for (let b = 0xc2; b <= 0xf4; b++) bytes.add(b); }
      }
      alts.push({ text, atom: `c:${charClass(first.ranges)}`, bytes });
    } else alts.push({ text, bytes: ANY_BYTE });
  }
  return choice(rules, alts);
}

/** The strings `texts` as one alternation of literals (a trie; see {@linkcode alternation}). */
export function literalChoice(rules: Rules, texts: readonly string[]): string {
  return choice(rules, trieAlts(rules, texts));
}

interface TrieNode {
  end: boolean;
  next: Map<number, TrieNode>;
}

/** The strings `texts` as alternatives sharing their prefixes: one per first code point. */
function trieAlts(rules: Rules, texts: readonly string[]): Alt[] {
  const root: TrieNode = { end: false, next: new Map() };
  for (const t of texts) {
    let node = root;
    for (const ch of t) {
      const cp = ch.codePointAt(0)!;
      let child = node.next.get(cp);
      if (child === undefined) node.next.set(cp, child = { end: false, next: new Map() });
      node = child;
    }
    node.end = true;
  }
  return nodeAlts(rules, root);
}

function nodeAlts(rules: Rules, node: TrieNode): Alt[] {
  const alts: Alt[] = [];
  for (const [cp, child] of node.next) {
    let run = String.fromCodePoint(cp), at = child;
    while (!at.end && at.next.size === 1) {
      const [c, n] = at.next.entries().next().value!;
      run += String.fromCodePoint(c);
      at = n;
    }
    const rest = at.next.size === 0 ? "" : ` ${choice(rules, nodeAlts(rules, at))}`;
    const b = utf8(cp)[0]!;
    alts.push({ text: `${literal(run)}${rest}`, atom: `b:${b}`, bytes: new Set([b]) });
  }
  if (node.end) alts.push(NO_ALT);
  return alts;
}
