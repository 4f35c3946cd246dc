/**
 * ECMA-262 regular expressions, read with the `u` flag (the reading JSON Schema's `pattern`
 * asks for: code points, strict syntax) and no other flag, parsed to a tree over sets of code
 * points. A pattern is first given to this runtime's own `RegExp`, so syntax is exactly
 * ECMA-262's; what the tree cannot hold exactly as a regular language is refused by name with a
 * {@linkcode PatternRefusal}: backreferences, lookahead and lookbehind, `\b` and `\B`, and
 * modifier groups (`(?i:...)`). `\p{...}` and `\P{...}` are read exactly as this runtime's
 * `RegExp` defines them (every code point is asked once, the answer cached).
 */
import {
  ANY,
  type CharSet,
  complement,
  DIGIT,
  DOT,
  intersect,
  normalize,
  SCALARS,
  single,
  SPACE,
  union,
  WORD,
} from "./charset.ts";

/** A regular expression's tree. `max` is `Infinity` for an unbounded repetition. */
export type Regex =
  | { readonly kind: "set"; readonly set: CharSet }
  | { readonly kind: "seq"; readonly items: readonly Regex[] }
  | { readonly kind: "alt"; readonly alts: readonly Regex[] }
  | { readonly kind: "repeat"; readonly node: Regex; readonly min: number; readonly max: number }
  | { readonly kind: "start" }
  | { readonly kind: "end" };

/**
 * A pattern (or format) that cannot be enforced exactly: `why` says what, in a phrase that
 * reads after "pattern ...: ". The JSON Schema side turns it into a `SchemaRefusal`.
 */
export class PatternRefusal extends Error {
  override readonly name = "PatternRefusal";

  constructor(readonly why: string) {
    super(why);
  }
}

/** The tree of `source`, an ECMA-262 pattern read with the `u` flag. */
export function parseRegex(source: string): Regex {
  try {
    new RegExp(source, "u");
  } catch (e) {
    throw new PatternRefusal(
      `is not a valid ECMA-262 regular expression (read with the u flag): ${(e as Error).message}`,
    );
  }
  const parser = new Parser(source);
  const tree = parser.alternation();
  if (!parser.done()) parser.refuse("an unexpected character");
  return tree;
}

const SYNTAX = new Set("^$\\.*+?()[]{}|/-");

/** Groups nested deeper than this are refused (every later pass walks the tree recursively). */
export const MAX_GROUP_DEPTH = 200;

class Parser {
  readonly #cps: number[];
  #at = 0;
  #depth = 0;

  constructor(readonly source: string) {
    this.#cps = Array.from(source, (c) => c.codePointAt(0)!);
  }

  done(): boolean {
    return this.#at >= this.#cps.length;
  }

  refuse(what: string): never {
    throw new PatternRefusal(`has ${what} at offset ${this.#at}, which Kiln does not enforce`);
  }

  #peek(ahead = 0): string {
    const cp = this.#cps[this.#at + ahead];
    return cp === undefined ? "" : String.fromCodePoint(cp);
  }

  #eat(text: string): boolean {
    for (let i = 0; i < text.length; i++) if (this.#peek(i) !== text[i]) return false;
    this.#at += text.length;
    return true;
  }

  #next(): number {
    const cp = this.#cps[this.#at++];
    if (cp === undefined) this.refuse("an unexpected end");
    return cp;
  }

  alternation(): Regex {
    const alts = [this.#sequence()];
    while (this.#eat("|")) alts.push(this.#sequence());
    return alts.length === 1 ? alts[0]! : { kind: "alt", alts };
  }

  #sequence(): Regex {
    const items: Regex[] = [];
    while (!this.done() && this.#peek() !== "|" && this.#peek() !== ")") {
      items.push(this.#quantified(this.#term()));
    }
    return items.length === 1 ? items[0]! : { kind: "seq", items };
  }

  #quantified(node: Regex): Regex {
    let min: number, max: number;
    const c = this.#peek();
    if (c === "*") [min, max] = [0, Infinity];
    else if (c === "+") [min, max] = [1, Infinity];
    else if (c === "?") [min, max] = [0, 1];
    else if (c === "{") {
      this.#at++;
      min = this.#number();
      max = !this.#eat(",") ? min : this.#peek() === "}" ? Infinity : this.#number();
      if (this.#peek() !== "}") this.refuse("a malformed quantifier");
    } else return node;
    this.#at++;
    this.#eat("?"); // lazy: the same language
    return { kind: "repeat", node, min, max };
  }

  #term(): Regex {
    const c = this.#peek();
    if (c === "^" || c === "$") {
      this.#at++;
      return { kind: c === "^" ? "start" : "end" };
    }
    if (c === "(") return this.#group();
    if (c === ".") {
      this.#at++;
      return { kind: "set", set: DOT };
    }
    if (c === "[") return { kind: "set", set: this.#class() };
    if (c === "\\") return { kind: "set", set: this.#escape(false) };
    return { kind: "set", set: single(this.#next()) };
  }

  #group(): Regex {
    this.#at++;
    if (this.#eat("?")) {
      if (this.#peek() === "=" || this.#peek() === "!") this.refuse("a lookahead");
      if (this.#eat("<")) {
        if (this.#peek() === "=" || this.#peek() === "!") this.refuse("a lookbehind");
        while (this.#next() !== 0x3e); // the group's name, up to `>`
      } else if (!this.#eat(":")) this.refuse("a modifier group");
    }
    if (++this.#depth > MAX_GROUP_DEPTH) {
      throw new PatternRefusal(`nests groups more than ${MAX_GROUP_DEPTH} deep (Kiln's budget)`);
    }
    const inner = this.alternation();
    this.#depth--;
    if (!this.#eat(")")) this.refuse("an unclosed group");
    return inner;
  }

  #class(): CharSet {
    this.#at++;
    const negate = this.#eat("^");
    const parts: CharSet[] = [];
    while (this.#peek() !== "]") {
      const lo = this.#classAtom();
      if (this.#peek() === "-" && this.#peek(1) !== "]" && this.#peek(1) !== "") {
        this.#at++;
        const hi = this.#classAtom();
        parts.push([[lo[0]![0], hi[0]![0]]]); // both single code points (checked by RegExp)
      } else parts.push(lo);
    }
    this.#at++;
    const set = parts.reduce(union, [] as CharSet);
    return negate ? complement(set) : set;
  }

  #classAtom(): CharSet {
    if (this.#peek() !== "\\") return single(this.#next());
    return this.#escape(true);
  }

  /** An escape, at its backslash: a set (one code point for a character escape). */
  #escape(inClass: boolean): CharSet {
    this.#at++;
    const c = this.#peek();
    this.#at++;
    switch (c) {
      case "d":
        return DIGIT;
      case "D":
        return complement(DIGIT);
      case "w":
        return WORD;
      case "W":
        return complement(WORD);
      case "s":
        return SPACE;
      case "S":
        return complement(SPACE);
      case "p":
      case "P":
        return this.#property(c === "P");
      case "b":
        if (inClass) return single(0x08);
        return this.refuse("a word boundary (\\b)");
      case "B":
        return this.refuse("a non-word-boundary (\\B)");
      case "k":
        return this.refuse("a named backreference");
    }
    if (c >= "1" && c <= "9") return this.refuse("a backreference");
    if (inClass && c === "-") return single(0x2d);
    return single(this.#characterEscape(c));
  }

  /** A character escape after its backslash, `c` its first character (already read). */
  #characterEscape(c: string): number {
    const simple: Record<string, number> = { t: 9, n: 10, v: 11, f: 12, r: 13, "0": 0 };
    if (c in simple) return simple[c]!;
    if (c === "c") return this.#next() % 32;
    if (c === "x") return this.#hex(2);
    if (c === "u") {
      if (this.#eat("{")) {
        let cp = 0;
        while (!this.#eat("}")) cp = cp * 16 + parseInt(String.fromCodePoint(this.#next()), 16);
        return cp;
      }
      const unit = this.#hex(4);
      // With the u flag, `\uD83D\uDE00` is one code point.
      if (unit >= 0xd800 && unit <= 0xdbff && this.#peek() === "\\" && this.#peek(1) === "u") {
        const save = this.#at;
        this.#at += 2;
        if (this.#peek() !== "{") {
          const low = this.#hex(4);
          if (low >= 0xdc00 && low <= 0xdfff) {
            return 0x10000 + ((unit - 0xd800) << 10) + low - 0xdc00;
          }
        }
        this.#at = save;
      }
      return unit;
    }
    if (SYNTAX.has(c)) return c.codePointAt(0)!;
    return this.refuse(`an escape \\${c}`);
  }

  /** Decimal digits (with the u flag, a `{` is always a quantifier's). */
  #number(): number {
    let v = 0;
    while (this.#peek() >= "0" && this.#peek() <= "9") v = v * 10 + this.#next() - 0x30;
    return v;
  }

  #hex(digits: number): number {
    let v = 0;
    for (let i = 0; i < digits; i++) v = v * 16 + parseInt(String.fromCodePoint(this.#next()), 16);
    return v;
  }

  #property(negate: boolean): CharSet {
    const start = this.#at;
    while (this.#next() !== 0x7d); // `{...}`
    const body = String.fromCodePoint(...this.#cps.slice(start, this.#at));
    const set = propertySet(body);
    return negate ? complement(set) : set;
  }
}

const properties = new Map<string, CharSet>();
let everyScalar: string | undefined;

/**
 * The code points of `\p{name}` (`body` is `{name}`), as this runtime's `RegExp` reads it:
 * found by matching it over one string of every scalar value, the surrogates asked one by one.
 */
function propertySet(body: string): CharSet {
  const known = properties.get(body);
  if (known !== undefined) return known;
  everyScalar ??= scalarsText();
  const ranges: [number, number][] = [];
  for (const m of everyScalar.matchAll(new RegExp(`\\p${body}+`, "gu"))) {
    // A run of consecutive scalars (it may step over the surrogates, which are not in it).
    const text = m[0], n = text.length, low = text.charCodeAt(n - 1);
    // The run's last code point: two units when it ends in a low surrogate.
    const last = n > 1 && low >= 0xdc00 && low <= 0xdfff ? text.codePointAt(n - 2)! : low;
    ranges.push([text.codePointAt(0)!, last]);
  }
  const surrogates: [number, number][] = [];
  const one = new RegExp(`^\\p${body}$`, "u");
  for (let cp = 0xd800; cp <= 0xdfff; cp++) {
    if (one.test(String.fromCharCode(cp))) surrogates.push([cp, cp]);
  }
  const set = union(intersect(normalize(ranges), SCALARS), surrogates);
  properties.set(body, set);
  return set;
}

/** Every scalar value in order, one string (BMP ones one unit each, the rest two). */
function scalarsText(): string {
  const chunks: string[] = [];
  const chunk: number[] = [];
  for (let cp = 0; cp <= ANY[0]![1]; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    chunk.push(cp);
    if (chunk.length === 8192) chunks.push(String.fromCodePoint(...chunk.splice(0)));
  }
  chunks.push(String.fromCodePoint(...chunk));
  return chunks.join("");
}
