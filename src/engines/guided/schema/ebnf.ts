/**
 * EBNF text in XGrammar's dialect (`root ::= ...`, GBNF-like): quoted literals, character
 * classes, and a set of named rules that the schema and pattern compilers add to. XGrammar's
 * escapes are `\"`, `\\`, `\n`, `\r`, `\t`, `\xHH`, `\uHHHH` and `\UHHHHHHHH`; every other
 * character stands for itself. `\x` takes every hex digit after it (`"\xe91"` is U+0E91, not
 * "é1"), so only `\u` and `\U` (four and eight digits) are written here. Nothing here checks
 * what it is given: a literal or class is written so that XGrammar reads back exactly the
 * characters passed in, whatever they are.
 */

/** A code point written inside an EBNF literal or class: printable ASCII as itself, the rest escaped. */
function escapeCodePoint(cp: number, special: string): string {
  const c = String.fromCodePoint(cp);
  if (special.includes(c)) return `\\${c}`;
  if (cp === 0x0a) return "\\n";
  if (cp === 0x0d) return "\\r";
  if (cp === 0x09) return "\\t";
  if (cp >= 0x20 && cp < 0x7f) return c;
  if (cp <= 0xffff) return `\\u${cp.toString(16).padStart(4, "0")}`;
  return `\\U${cp.toString(16).padStart(8, "0")}`;
}

/**
 * The EBNF literal matching exactly `text` (its code points; a lone surrogate is written as
 * `\uD8xx`, which XGrammar encodes as that code point's UTF-8 form, not valid UTF-8: callers
 * that must emit valid UTF-8 refuse lone surrogates before they get here).
 */
export function literal(text: string): string {
  let out = '"';
  for (const ch of text) out += escapeCodePoint(ch.codePointAt(0)!, '"\\');
  return `${out}"`;
}

/** An inclusive range of code points. */
export type CodeRange = readonly [number, number];

/** The EBNF class of the code points in `ranges` (`[...]`), or of those outside them (`[^...]`). */
export function charClass(ranges: readonly CodeRange[], negate = false): string {
  const one = (cp: number) => escapeCodePoint(cp, "]\\-^");
  const body = ranges.map(([lo, hi]) => lo === hi ? one(lo) : `${one(lo)}-${one(hi)}`).join("");
  return `[${negate ? "^" : ""}${body}]`;
}

/**
 * Named rules, each defined once: `add(body, hint)` returns a name for `body`, the same name for
 * the same body (so identical subschemas share one rule), made from `hint`.
 */
export class Rules {
  readonly #byBody = new Map<string, string>();
  readonly #rules: [string, string][] = [];
  readonly #used = new Set<string>(["root"]);

  /** A rule for `body` (an EBNF expression), named after `hint`; an existing one if the same. */
  add(body: string, hint = "r"): string {
    const known = this.#byBody.get(body);
    if (known !== undefined) return known;
    const name = this.#fresh(hint);
    this.#byBody.set(body, name);
    this.#rules.push([name, body]);
    return name;
  }

  /**
   * A name reserved now and defined later with `define` (for recursive rules: a `$ref` cycle).
   */
  reserve(hint = "r"): string {
    return this.#fresh(hint);
  }

  /** Define a name `reserve` returned. */
  define(name: string, body: string): void {
    this.#rules.push([name, body]);
  }

  /** Rules defined so far. */
  get size(): number {
    return this.#rules.length;
  }

  /** The grammar text: `root ::= rootBody`, then every rule. */
  text(rootBody: string): string {
    return [`root ::= ${rootBody}`, ...this.#rules.map(([n, b]) => `${n} ::= ${b}`)].join("\n");
  }

  #fresh(hint: string): string {
    const base = hint.replace(/[^A-Za-z0-9_]/g, "_").replace(/^([^A-Za-z])/, "r_$1").slice(0, 40) ||
      "r";
    let name = base;
    for (let i = 1; this.#used.has(name); i++) name = `${base}_${i}`;
    this.#used.add(name);
    return name;
  }
}
