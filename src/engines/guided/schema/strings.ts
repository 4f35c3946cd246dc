/**
 * JSON strings in EBNF: a string's JSON text (quotes, escapes) for exactly the string values a
 * schema's `pattern`, `format`, `minLength` and `maxLength` allow, each value in its canonical
 * text (see `string_ebnf.ts`); and a guided `regex` option's grammar.
 *
 * One keyword's language is written from its pattern's tree (`C{m,n}` in O(log n) rules);
 * languages that must be intersected (`pattern` and `format`, either with a length) go through
 * minimal automata and are written one rule a state. Either way the grammar is exact; what
 * cannot be made so within {@linkcode BUDGET} is refused by name.
 */
import {
  BUDGET,
  type Budget,
  countedSet,
  type Dfa,
  product,
  regexDfa,
  withLength,
} from "./automaton.ts";
import { type CharSet, SCALARS } from "./charset.ts";
import { literal, Rules } from "./ebnf.ts";
import { formatRegex } from "./formats.ts";
import { parseRegex, PatternRefusal, type Regex } from "./regex.ts";
import { SchemaRefusal } from "./refusal.ts";
import {
  anchorsAtEnds,
  boundedRegex,
  charAlt,
  type CharWriter,
  dfaRules,
  jsonChar,
  rawChar,
  regexAlt,
  repeatAlt,
} from "./string_ebnf.ts";
import { type Alt, choice, EMPTY } from "./choice.ts";

/** A string schema's keywords. */
export interface StringConstraints {
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
}

/** How a string grammar is built. */
export interface StringOptions {
  /** Limits (default {@linkcode BUDGET}). */
  budget?: Budget;
  /** Go through the automaton even for one keyword (for tests: both ways give one language). */
  automaton?: boolean;
}

const QUOTE = literal('"');

/** One keyword's language: its tree, and whether it must match whole (else: contained). */
interface Source {
  keyword: "pattern" | "format";
  tree: Regex;
  whole: boolean;
}

/** How a language is written: raw or as JSON string content, and what ends it. */
interface Writer {
  char: CharWriter;
  close: Alt;
}

const JSON_TEXT: Writer = {
  char: jsonChar,
  close: { text: QUOTE, atom: "b:34", bytes: new Set([34]) },
};
const RAW: Writer = { char: rawChar, close: EMPTY };

/**
 * An EBNF expression for the JSON text of the strings `c` allows (rules added to `rules`);
 * `SchemaRefusal` for what cannot be enforced exactly. `pointer` is the string schema's place.
 */
export function jsonStringExpr(
  rules: Rules,
  c: StringConstraints,
  pointer: string,
  options: StringOptions = {},
): string {
  const budget = options.budget ?? BUDGET;
  const min = count(c, "minLength", pointer) ?? 0;
  const max = count(c, "maxLength", pointer) ?? Infinity;
  if (min > max) throw new SchemaRefusal("minLength", pointer, "is more than maxLength");
  const sources: Source[] = [];
  if (c.pattern !== undefined) {
    const tree = refusing("pattern", pointer, () => parseRegex(c.pattern!));
    sources.push({ keyword: "pattern", tree, whole: false });
  }
  if (c.format !== undefined) {
    sources.push({
      keyword: "format",
      tree: refusing("format", pointer, () => formatRegex(c.format!)),
      whole: true,
    });
  }
  const lengths = min > 0 || max < Infinity;
  const keyword = lengths
    ? (c.maxLength !== undefined ? "maxLength" : "minLength")
    : sources.at(-1)?.keyword;
  const size = rules.size;
  const expr = refusing(keyword ?? "type", pointer, () => {
    if (sources.length === 0) return counted(rules, { set: SCALARS, min, max }, JSON_TEXT);
    const body = sources.length === 1 && !options.automaton
      ? direct(rules, sources[0]!, min, max, JSON_TEXT)
      : undefined;
    return body ?? viaAutomaton(rules, sources, min, max, JSON_TEXT, budget);
  });
  if (rules.size - size > budget.rules) {
    throw new SchemaRefusal(keyword ?? "type", pointer, tooManyRules(budget));
  }
  return `${QUOTE} ${expr}`;
}

/**
 * The EBNF grammar (root rule `root`) of the strings that wholly match `pattern` (ECMA-262, read
 * with the `u` flag, as vLLM and XGrammar read a guided `regex`: the whole output matches),
 * each code point raw. `PatternRefusal` for a pattern that cannot be enforced exactly.
 */
export function regexGrammar(pattern: string, options: StringOptions = {}): string {
  const budget = options.budget ?? BUDGET;
  const rules = new Rules();
  const source: Source = { keyword: "pattern", tree: parseRegex(pattern), whole: true };
  const root = (options.automaton ? undefined : direct(rules, source, 0, Infinity, RAW)) ??
    viaAutomaton(rules, [source], 0, Infinity, RAW, budget);
  if (rules.size > budget.rules) throw new PatternRefusal(tooManyRules(budget));
  return rules.text(root);
}

/** The EBNF literal of `value`'s JSON text (for `const` and `enum`): `JSON.stringify`'s. */
export function jsonLiteral(value: unknown): string {
  const text = JSON.stringify(value);
  if (typeof text !== "string") throw new TypeError(`${String(value)} has no JSON text`);
  return literal(text);
}

/** `f()`, a `PatternRefusal` from it made a `SchemaRefusal` of `keyword` at `pointer`. */
function refusing<T>(keyword: string, pointer: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof PatternRefusal) throw new SchemaRefusal(keyword, pointer, e.why);
    throw e;
  }
}

function count(
  c: StringConstraints,
  key: "minLength" | "maxLength",
  pointer: string,
): number | undefined {
  const v = c[key];
  if (v === undefined) return undefined;
  if (!Number.isSafeInteger(v) || v < 0) {
    throw new SchemaRefusal(key, pointer, "is not a non-negative integer");
  }
  return v;
}

function tooManyRules(budget: Budget): string {
  return `is too large to enforce exactly: its grammar passes ${budget.rules} rules (Kiln's budget)`;
}

const NOTHING = "leaves no string a model can write (none matches, or only with a lone surrogate)";

/** `body`, then the close. */
function closed(body: string, w: Writer): string {
  if (w.close.text === '""') return body;
  return body === '""' ? w.close.text : `${body} ${w.close.text}`;
}

/** `C{min,max}` and then the close. */
function counted(rules: Rules, c: { set: CharSet; min: number; max: number }, w: Writer): string {
  if (c.min > c.max) throw new PatternRefusal(NOTHING);
  if (c.max === 0) return closed('""', w);
  return closed(repeatAlt(rules, charAlt(rules, w.char, c.set), c.min, c.max, "str").text, w);
}

/**
 * One source written from its tree, and the close; undefined where its anchors need the
 * automaton, or where lengths cannot be held by bounding one counted set (`boundedRegex`).
 */
function direct(
  rules: Rules,
  src: Source,
  min: number,
  max: number,
  w: Writer,
): string | undefined {
  let alts = anchorsAtEnds(src.tree);
  if (alts === undefined) return undefined;
  if (min > 0 || max < Infinity) {
    const only = alts.length === 1 ? alts[0]! : undefined;
    if (only === undefined || !(src.whole || (only.start && only.end))) return undefined;
    const body = boundedRegex(only.body, min, max);
    if (body === null) throw new PatternRefusal(NOTHING);
    if (body === undefined) return undefined;
    alts = [{ start: true, end: true, body }];
  }
  const any = charAlt(rules, w.char, SCALARS, "str_any");
  const bodies = alts.flatMap((a): Alt[] => {
    const body = regexAlt(rules, a.body, w.char, "str");
    if (body === null) return [];
    const open = !(src.whole || a.start), shut = !(src.whole || a.end);
    const empty = body.alt.text === '""';
    const parts = [
      open ? `${any.text}*` : "",
      empty ? "" : body.alt.text,
      shut && !(open && empty) ? `${any.text}*` : "",
    ];
    const text = parts.filter((p) => p).join(" ") || '""';
    const bytes = new Set([
      ...(open || (body.nullable && shut) ? any.bytes : []),
      ...body.alt.bytes,
    ]);
    return [{ text, bytes, ...(!open && body.alt.atom ? { atom: body.alt.atom } : {}) }];
  });
  if (bodies.length === 0) throw new PatternRefusal(NOTHING);
  return closed(choice(rules, bodies), w);
}

/** The sources' languages intersected as automata, with the lengths, one rule a state. */
function viaAutomaton(
  rules: Rules,
  sources: Source[],
  min: number,
  max: number,
  w: Writer,
  budget: Budget,
): string {
  let dfa: Dfa | undefined;
  for (const src of sources) {
    const one = automaton(src, budget);
    dfa = dfa === undefined ? one : product(dfa, one, budget);
  }
  const c = countedSet(dfa!);
  if (c !== undefined) {
    return counted(rules, { set: c.set, min: Math.max(min, c.min), max: Math.min(max, c.max) }, w);
  }
  if (min > 0 || max < Infinity) dfa = withLength(dfa!, min, max, budget);
  if (dfa!.edges[dfa!.start]!.length === 0 && !dfa!.accept[dfa!.start]) {
    throw new PatternRefusal(NOTHING);
  }
  if (dfa!.accept.length > budget.states) {
    throw new PatternRefusal(
      `is too large to enforce exactly: its automaton has ${
        dfa!.accept.length
      } states, past ${budget.states} (Kiln's budget)`,
    );
  }
  return dfaRules(rules, dfa!, w.char, w.close, "str");
}

const formatAutomata = new Map<Regex, Dfa>();

function automaton(src: Source, budget: Budget): Dfa {
  if (src.keyword !== "format") return regexDfa(src.tree, src.whole, budget);
  const known = formatAutomata.get(src.tree);
  if (known !== undefined) return known;
  const dfa = regexDfa(src.tree, true, budget);
  formatAutomata.set(src.tree, dfa);
  return dfa;
}
