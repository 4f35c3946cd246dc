/**
 * String languages as EBNF: a pattern's tree, an automaton (`automaton.ts`) or a counted set
 * (`C{m,n}`) written as rules, each code point either raw UTF-8 (a guided `regex` option's
 * output) or as its canonical JSON text inside a JSON string. The canonical text is
 * `JSON.stringify`'s: `"` as `\"`, `\` as `\\`, U+0008, U+0009, U+000A, U+000C and U+000D as
 * `\b`, `\t`, `\n`, `\f`, `\r`, the other controls below U+0020 as `\u00xx` (lower-case hex),
 * everything else raw UTF-8 (DEL, U+2028 and U+2029 too). So a JSON string's grammar never needs
 * a raw control character, accepts exactly one text per string value, and that text parses back
 * to the value. Every alternation goes through `choice` (see `choice.ts`), sets through
 * `utf8.ts`.
 *
 * Counts are written in O(log n) rules (XGrammar expands `{m,n}` into one rule per repetition,
 * and its compile time grows with rules): `P_k` is 2^k units, `Q_k` zero to 2^k − 1 units.
 */
import type { Dfa } from "./automaton.ts";
import { type CharSet, has, intersect, isEmpty, SCALARS, setKey, subtract } from "./charset.ts";
import { type Alt, choice, EMPTY, firstBytes } from "./choice.ts";
import { charClass, literal, type Rules } from "./ebnf.ts";
import type { Regex } from "./regex.ts";
import { utf8Alts } from "./utf8.ts";

/** How the code points of a set are written (rules added to `rules`): raw, or as JSON text. */
export type CharWriter = (rules: Rules, set: CharSet) => Alt[];

/** What a JSON string holds raw: scalars but controls, `"` and `\`. */
const RAW_IN_JSON = subtract(SCALARS, [[0, 0x1f], [0x22, 0x22], [0x5c, 0x5c]]);
const SHORT: Record<number, string> = {
  0x22: '"',
  0x5c: "\\",
  8: "b",
  9: "t",
  10: "n",
  12: "f",
  13: "r",
};
const HEX = "0123456789abcdef";

/** One code point of `set` (surrogates dropped), raw UTF-8 (see `utf8.ts`). */
export function rawChar(rules: Rules, set: CharSet): Alt[] {
  return utf8Alts(rules, set);
}

/** The canonical JSON text (inside a string) of one code point of `set` (surrogates dropped). */
export function jsonChar(rules: Rules, set: CharSet): Alt[] {
  const alts = utf8Alts(rules, intersect(set, RAW_IN_JSON));
  const escapes: Alt[] = [];
  const short = Object.keys(SHORT).map(Number).filter((cp) => has(set, cp));
  if (short.length > 0) escapes.push(classAlt(short.map((cp) => SHORT[cp]!.codePointAt(0)!)));
  const hex: Alt[] = [];
  for (const high of [0, 1]) {
    const lows: number[] = [];
    for (let low = 0; low < 16; low++) {
      const cp = high * 16 + low;
      if (has(set, cp) && SHORT[cp] === undefined) lows.push(HEX.charCodeAt(low));
    }
    if (lows.length > 0) hex.push(litAlt(`${high}`, classAlt(lows).text));
  }
  if (hex.length > 0) escapes.push(litAlt("u00", term(rules, hex, "hex")));
  if (escapes.length > 0) alts.push(litAlt("\\", term(rules, escapes, "esc")));
  return alts;
}

/** The literal `text`, then `rest` (EBNF) if given, as an alternative. */
function litAlt(text: string, rest?: string): Alt {
  const first = new TextEncoder().encode(text)[0]!;
  const lit = literal(text);
  return {
    text: rest === undefined ? lit : `${lit} ${rest}`,
    atom: `b:${first}`,
    bytes: new Set([first]),
  };
}

/** The class of the ASCII code points `cps`, as an alternative. */
function classAlt(cps: number[]): Alt {
  const text = cps.length === 1
    ? literal(String.fromCodePoint(cps[0]!))
    : charClass(cps.map((c) => [c, c] as const));
  return { text, atom: cps.length === 1 ? `b:${cps[0]}` : `c:${text}`, bytes: new Set(cps) };
}

/** Whether `text` is one EBNF element (a literal, a class or a rule name). */
function single(text: string): boolean {
  return /^("(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|\w+)$/.test(text);
}

/**
 * One term for `alts`: the alternative itself when it is one literal or class, else a rule
 * that XGrammar neither inlines nor looks into (it ends in a reference to an empty rule), so
 * an alternation holding it sees one edge of its own.
 */
function term(rules: Rules, alts: readonly Alt[], hint: string): string {
  return charTerm(rules, alts, hint).text;
}

function charTerm(rules: Rules, alts: readonly Alt[], hint: string): Alt {
  const only = alts.length === 1 ? alts[0]! : undefined;
  if (only !== undefined && only.atom !== undefined && single(only.text)) return only;
  const name = rules.add(`${choice(rules, alts)} ${rules.add('""', "nil")}`, hint);
  return { text: name, atom: `r:${name}`, bytes: firstBytes(alts) };
}

/** One code point of `set`, as one term (see `term`). */
export function charAlt(rules: Rules, write: CharWriter, set: CharSet, hint = "str_c"): Alt {
  return charTerm(rules, write(rules, set), hint);
}

/**
 * Rules for `dfa`'s strings, one per state, each followed by `close` (the closing quote, or
 * empty); returns the start state's rule. `dfa` is trimmed and accepts something.
 */
export function dfaRules(
  rules: Rules,
  dfa: Dfa,
  write: CharWriter,
  close: Alt,
  hint: string,
): string {
  const names = dfa.accept.map(() => rules.reserve(hint));
  dfa.accept.forEach((accept, s) => {
    const alts = accept ? [close] : [];
    for (const { set, to } of dfa.edges[s]!) {
      const c = charAlt(rules, write, set);
      alts.push({ ...c, text: `${c.text} ${names[to]}` });
    }
    rules.define(names[s]!, choice(rules, alts));
  });
  return names[dfa.start]!;
}

/**
 * An alternative for `min` to `max` units (`max` may be `Infinity`) in O(log max) rules;
 * `unit` is one term.
 */
export function repeatAlt(rules: Rules, unit: Alt, min: number, max: number, hint: string): Alt {
  const u = unit.text;
  const pow: string[] = [u]; // pow[k]: exactly 2^k units
  const upto: string[] = ['""']; // upto[k]: 0 to 2^k - 1 units
  const p = (k: number): string => {
    while (pow.length <= k) pow.push(rules.add(`${pow.at(-1)} ${pow.at(-1)}`, `${hint}_p`));
    return pow[k]!;
  };
  const q = (k: number): string => {
    while (upto.length <= k) {
      const j = upto.length - 1;
      upto.push(rules.add(j === 0 ? `${u}?` : `${p(j)}? ${upto[j]}`, `${hint}_q`));
    }
    return upto[k]!;
  };
  const atMost = (n: number): string => {
    if (n === 0) return '""';
    let k = 0;
    while (2 ** (k + 1) <= n) k++;
    if (n === 2 ** (k + 1) - 1) return q(k + 1);
    const alts = [{ text: q(k), bytes: unit.bytes }, {
      text: `${p(k)} ${atMost(n - 2 ** k)}`,
      bytes: unit.bytes,
    }];
    return rules.add(choice(rules, alts), `${hint}_u`);
  };
  const parts: string[] = [];
  for (let k = 0, n = min; n > 0; k++, n = Math.floor(n / 2)) if (n % 2 === 1) parts.push(p(k));
  if (max === Infinity) parts.push(`${u}*`);
  else if (max > min) parts.push(atMost(max - min));
  if (parts.length === 0) return EMPTY;
  return {
    text: parts.join(" "),
    bytes: unit.bytes,
    ...(min > 0 && parts.length === 1 && parts[0] === u ? { atom: unit.atom } : {}),
  };
}

/** A tree's language as one alternative, and whether it matches the empty string. */
export interface Written {
  alt: Alt;
  nullable: boolean;
}

/**
 * `node`'s strings (anchors must be gone: see `anchorsAtEnds`) as one alternative, or null
 * when it matches none (a set of surrogates only).
 */
export function regexAlt(
  rules: Rules,
  node: Regex,
  write: CharWriter,
  hint: string,
): Written | null {
  switch (node.kind) {
    case "set": {
      const set = intersect(node.set, SCALARS);
      return isEmpty(set) ? null : { alt: charAlt(rules, write, set), nullable: false };
    }
    case "seq": {
      const parts: Written[] = [];
      for (const item of node.items) {
        const w = regexAlt(rules, item, write, hint);
        if (w === null) return null;
        if (w.alt.text !== '""') parts.push(w);
      }
      if (parts.length === 0) return { alt: EMPTY, nullable: true };
      const bytes = new Set<number>();
      for (const w of parts) {
        for (const b of w.alt.bytes) bytes.add(b);
        if (!w.nullable) break;
      }
      const first = parts[0]!;
      const atom = first.nullable ? undefined : first.alt.atom;
      return {
        alt: { text: parts.map((w) => w.alt.text).join(" "), bytes, ...(atom ? { atom } : {}) },
        nullable: parts.every((w) => w.nullable),
      };
    }
    case "alt": {
      const alts = node.alts.map((a) => regexAlt(rules, a, write, hint)).filter((w) => w !== null);
      if (alts.length === 0) return null;
      if (alts.length === 1) return alts[0]!;
      const text = choice(rules, alts.map((w) => w.alt));
      return {
        alt: { text, bytes: firstBytes(alts.map((w) => w.alt)) },
        nullable: alts.some((w) => w.nullable),
      };
    }
    case "repeat": {
      const inner = regexAlt(rules, node.node, write, hint);
      if (inner === null) return node.min === 0 ? { alt: EMPTY, nullable: true } : null;
      if (inner.alt.text === '""') return inner;
      const unit = inner.alt.atom !== undefined && single(inner.alt.text)
        ? inner.alt
        : charLike(rules, inner.alt, hint);
      return {
        alt: repeatAlt(rules, unit, node.min, node.max, hint),
        nullable: node.min === 0 || inner.nullable,
      };
    }
    default:
      throw new Error("an anchor left in a pattern's tree");
  }
}

/** `alt` as one rule term that XGrammar keeps apart (for a repetition's unit). */
function charLike(rules: Rules, alt: Alt, hint: string): Alt {
  const name = rules.add(`${alt.text} ${rules.add('""', "nil")}`, `${hint}_g`);
  return { text: name, atom: `r:${name}`, bytes: alt.bytes };
}

/** One alternative of a pattern: whether it was anchored at each end, and its tree without. */
export interface Anchored {
  start: boolean;
  end: boolean;
  body: Regex;
}

/**
 * `node`'s top-level alternatives with their leading `^` and trailing `$` taken off, or
 * undefined when an anchor is anywhere else (the automaton then reads it exactly).
 */
export function anchorsAtEnds(node: Regex): Anchored[] | undefined {
  const out: Anchored[] = [];
  for (const alt of node.kind === "alt" ? node.alts : [node]) {
    const items = alt.kind === "seq" ? [...alt.items] : [alt];
    let start = false, end = false;
    while (items[0]?.kind === "start") items.shift(), start = true;
    while (items[items.length - 1]?.kind === "end") items.pop(), end = true;
    const body: Regex = items.length === 1 ? items[0]! : { kind: "seq", items };
    if (hasAnchor(body)) return undefined;
    out.push({ start, end, body });
  }
  return out;
}

function hasAnchor(node: Regex): boolean {
  switch (node.kind) {
    case "start":
    case "end":
      return true;
    case "set":
      return false;
    case "seq":
      return node.items.some(hasAnchor);
    case "alt":
      return node.alts.some(hasAnchor);
    case "repeat":
      return hasAnchor(node.node);
  }
}

/**
 * When `node` (no anchors) matches exactly `C{min,max}` for one set `C`, that set and those
 * counts (a pattern like `^[a-z]{2,8}$`, read without building an automaton); else undefined.
 */
export function countedRegex(node: Regex): { set: CharSet; min: number; max: number } | undefined {
  switch (node.kind) {
    case "set": {
      const set = intersect(node.set, SCALARS);
      return isEmpty(set) ? undefined : { set, min: 1, max: 1 };
    }
    case "repeat": {
      const inner = countedRegex(node.node);
      // `(C{n}){a,b}` is `C{na,nb}`; `(C{1,2}){3}` is not always so simple, so not read here.
      if (inner === undefined || inner.min !== inner.max) return undefined;
      if (inner.min === 0) return inner;
      return { set: inner.set, min: inner.min * node.min, max: inner.max * node.max };
    }
    case "seq": {
      const parts = node.items.map(countedRegex);
      if (parts.length === 0 || parts.some((p) => p === undefined)) return undefined;
      const key = setKey(parts[0]!.set);
      if (parts.some((p) => setKey(p!.set) !== key)) return undefined;
      return parts.reduce((a, p) => ({ set: a!.set, min: a!.min + p!.min, max: a!.max + p!.max }))!;
    }
    default:
      return undefined;
  }
}

/** The fewest and most code points of `node`'s strings (no anchors). */
function lengthRange(node: Regex): [number, number] {
  switch (node.kind) {
    case "set":
      return [1, 1];
    case "seq":
      return node.items.map(lengthRange).reduce(([a, b], [c, d]) => [a + c, b + d], [0, 0]);
    case "alt": {
      const all = node.alts.map(lengthRange);
      return [Math.min(...all.map((r) => r[0])), Math.max(...all.map((r) => r[1]))];
    }
    case "repeat": {
      const [lo, hi] = lengthRange(node.node);
      return [lo * node.min, hi === 0 ? 0 : hi * node.max];
    }
    default:
      return [0, 0];
  }
}

/**
 * `node` (whole-string, no anchors) with its length held to `min`..`max` code points, when that
 * is a matter of one count: every part of it but at most one has one length, and that one is a
 * counted set (`^[a-z ]+[.!?]$` with `maxLength: 64` is `[a-z ]{1,63}[.!?]`). Null when no
 * string is left; undefined when the automaton must do it.
 */
export function boundedRegex(node: Regex, min: number, max: number): Regex | null | undefined {
  const items = node.kind === "seq" ? node.items : [node];
  const ranges = items.map(lengthRange);
  const loose = ranges.flatMap(([lo, hi], i) => lo === hi ? [] : [i]);
  const fixed = ranges.reduce((n, [lo, hi]) => n + (lo === hi ? lo : 0), 0);
  if (loose.length === 0) return fixed >= min && fixed <= max ? node : null;
  if (loose.length > 1) return undefined;
  const at = loose[0]!, c = countedRegex(items[at]!);
  if (c === undefined) return undefined;
  const lo = Math.max(c.min, min - fixed), hi = Math.min(c.max, max - fixed);
  if (lo > hi) return null;
  const bounded: Regex = { kind: "repeat", node: { kind: "set", set: c.set }, min: lo, max: hi };
  return { kind: "seq", items: items.map((item, i) => i === at ? bounded : item) };
}
