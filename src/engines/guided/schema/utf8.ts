/**
 * Sets of code points written for XGrammar exactly, as UTF-8. XGrammar 0.1.27 reads a
 * character class (`[...]`) as a class of single BYTES: `[\x80-\xbf]` is one continuation
 * byte, and a code point above 0xFF in a class stands for its low byte (`[\u2028-\u2029]`
 * matches `(` and `)`); a class of one element becomes a literal of that code point
 * (`[\xc3]` is U+00C3, two bytes). A negated class takes any UTF-8-shaped sequence, overlong
 * forms, surrogates and values past U+10FFFF included, and ignores exclusions past 0x7F. Only
 * literals are read as code points. So a set is written as: one class for its ASCII part, and
 * for the rest, sequences of byte classes of at least two bytes each ("boxes", every byte string
 * of which is the UTF-8 of a code point in the set), or literals. The result accepts exactly
 * the UTF-8 encodings of the set's scalar values: no malformed UTF-8, no surrogate. A byte
 * that only one code point's encodings start with (a lone lead byte) can be written only in
 * literals, so scattered sets (`\p{L}`) take many; past {@linkcode UTF8_TERMS} terms a set is
 * refused. The alternatives go through `choice` (`choice.ts`: literals sharing a first byte
 * would trip XGrammar's merging). The tests (`utf8_test.ts`) check XGrammar still reads classes
 * so; re-run them on an XGrammar upgrade (later XGrammar reads classes as code points).
 */
import { type CharSet, intersect, isEmpty, normalize, SCALARS, setKey } from "./charset.ts";
import type { Alt } from "./choice.ts";
import { charClass, literal, type Rules } from "./ebnf.ts";
import { PatternRefusal } from "./regex.ts";

/** The byte values allowed at each position of a UTF-8 sequence (sorted). */
type Box = number[][];

/** Terms one set may take before it is refused as too large. */
export const UTF8_TERMS = 3_000;

/** `cp`'s UTF-8 bytes. */
export function utf8(cp: number): number[] {
  if (cp < 0x80) return [cp];
  if (cp < 0x800) return [0xc0 | (cp >> 6), 0x80 | (cp & 63)];
  if (cp < 0x10000) return [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63)];
  return [0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 63), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63)];
}

/** `[lo, hi]` (one UTF-8 length) as boxes whose byte strings are exactly its encodings. */
function boxes(lo: number, hi: number, out: Box[]): void {
  if (lo > hi) return;
  for (const edge of [0x7f, 0x7ff, 0xffff]) {
    if (lo <= edge && edge < hi) return boxes(lo, edge, out), boxes(edge + 1, hi, out);
  }
  for (let i = 1; i < 4; i++) {
    const m = (1 << (6 * i)) - 1;
    if ((lo & ~m) === (hi & ~m)) continue;
    if ((lo & m) !== 0) return boxes(lo, lo | m, out), boxes((lo | m) + 1, hi, out);
    if ((hi & m) !== m) return boxes(lo, (hi & ~m) - 1, out), boxes(hi & ~m, hi, out);
  }
  const a = utf8(lo), b = utf8(hi);
  out.push(a.map((x, i) => Array.from({ length: b[i]! - x + 1 }, (_, k) => x + k)));
}

const LEADS: Record<number, [number, number]> = {
  2: [0xc2, 0xdf],
  3: [0xe0, 0xef],
  4: [0xf0, 0xf4],
};
const MIN_CP: Record<number, number> = { 2: 0x80, 3: 0x800, 4: 0x10000 };

/** Whether `[lo, hi]` lies within `set`. */
function within(set: CharSet, lo: number, hi: number): boolean {
  let a = 0, b = set.length - 1;
  while (a <= b) {
    const mid = (a + b) >> 1, [l, h] = set[mid]!;
    if (lo < l) b = mid - 1;
    else if (lo > h) a = mid + 1;
    else return hi <= h;
  }
  return false;
}

/** Whether every byte string of `box` is well-formed UTF-8 of a code point in `set`. */
function boxWithin(box: Box, set: CharSet): boolean {
  const n = box.length, [leadLo, leadHi] = LEADS[n]!;
  if (box[0]!.some((b) => b < leadLo || b > leadHi)) return false;
  if (box.slice(1).some((p) => p.some((b) => b < 0x80 || b > 0xbf))) return false;
  const runs = normalize(box[n - 1]!.map((b) => [b & 63, b & 63] as const));
  const go = (i: number, acc: number): boolean => {
    if (i === n - 1) {
      return runs.every(([lo, hi]) =>
        ((acc << 6) | lo) >= MIN_CP[n]! && within(set, (acc << 6) | lo, (acc << 6) | hi)
      );
    }
    return box[i]!.every((b) => go(i + 1, i === 0 ? b & (0x7f >> n) : (acc << 6) | (b & 63)));
  };
  return go(0, 0);
}

/**
 * Boxes that differ in one position only, merged (`C4 80` and `C4 82` are `C4 [80 82]`), until
 * none do: scattered sets (`\p{Lu}`) then need fewer single-byte positions.
 */
function merge(input: Box[]): Box[] {
  let list = input;
  for (let changed = true; changed;) {
    changed = false;
    for (let pos = 0; pos < 4; pos++) {
      const groups = new Map<string, Box>();
      for (const box of list) {
        if (pos >= box.length) {
          groups.set(`${box.length}|${box.join("|")}`, box);
          continue;
        }
        const key = `${box.length}|${pos}|${
          box.map((p, i) => i === pos ? "*" : p.join()).join("|")
        }`;
        const known = groups.get(key);
        if (known === undefined) groups.set(key, box.map((p) => [...p]));
        else {
          known[pos] = [...new Set([...known[pos]!, ...box[pos]!])].sort((a, b) => a - b);
          changed = true;
        }
      }
      list = [...groups.values()];
    }
  }
  return list;
}

/**
 * Terms for `box` (within `set`) with no class of one non-ASCII byte: each single-byte position
 * given a partner byte where the wider box stays within `set`, else the box split, down to
 * literals of one code point.
 */
function cover(box: Box, set: CharSet, out: Term[]): void {
  if (out.length > UTF8_TERMS) {
    throw new PatternRefusal(
      `needs a set of characters too large to write exactly (past ${UTF8_TERMS} terms)`,
    );
  }
  const singles = box.flatMap((p, i) => p.length === 1 ? [i] : []);
  if (singles.length === box.length) {
    return void out.push({ text: literal(decode(box.map((p) => p[0]!))), first: [box[0]![0]!] });
  }
  const wide = box.map((p) => [...p]);
  for (const i of singles) {
    const v = box[i]![0]!, [lo, hi] = i === 0 ? LEADS[box.length]! : [0x80, 0xbf];
    for (let w = lo; w <= hi && wide[i]!.length === 1; w++) {
      if (w === v) continue;
      wide[i] = w < v ? [w, v] : [v, w];
      if (!boxWithin(wide, set)) wide[i] = [v];
    }
    if (wide[i]!.length === 1) break;
  }
  if (wide.every((p) => p.length > 1)) return void out.push(wide);
  const i = box.findIndex((p) => p.length > 1);
  const half = box[i]!.length >> 1;
  cover(box.map((p, j) => j === i ? p.slice(0, half) : p), set, out);
  cover(box.map((p, j) => j === i ? p.slice(half) : p), set, out);
}

/** The code point whose UTF-8 is `bytes` (well-formed). */
function decode(bytes: number[]): string {
  const n = bytes.length;
  let cp = bytes[0]! & (0x7f >> n);
  for (let i = 1; i < n; i++) cp = (cp << 6) | (bytes[i]! & 63);
  return String.fromCodePoint(cp);
}

/** An ASCII class or a literal (EBNF text, first byte), or a box of byte classes. */
type Term = { text: string; first: number[] } | Box;

/**
 * Alternatives that together accept exactly the UTF-8 of `set`'s scalar values (none when it
 * holds none), for `choice` (`choice.ts`); a box's continuation bytes are a rule of `rules`,
 * shared by every set (XGrammar compiles `[\xe1-\xec] tail` faster than the classes in line).
 */
export function utf8Alts(rules: Rules, input: CharSet): Alt[] {
  const key = setKey(input);
  let terms = written.get(key);
  if (terms === undefined) {
    terms = write(intersect(input, SCALARS));
    if (written.size >= 256) written.delete(written.keys().next().value!);
    written.set(key, terms);
  }
  return terms.map((t) => {
    if (!Array.isArray(t)) {
      const atom = t.first.length === 1 ? `b:${t.first[0]}` : `c:${t.text}`;
      return { text: t.text, atom, bytes: new Set(t.first) };
    }
    const classes = t.map((p) => charClass(normalize(p.map((b) => [b, b] as const))));
    const tail = classes.slice(1).join(" ");
    const text = `${classes[0]} ${classes.length === 2 ? tail : rules.add(tail, "utf8_tail")}`;
    return { text, atom: `c:${classes[0]}`, bytes: new Set(t[0]) };
  });
}

/** Sets written lately (a DFA's edges and `jsonChar` ask for the same ones again). */
const written = new Map<string, Term[]>();

function write(set: CharSet): Term[] {
  const out: Term[] = [];
  const ascii = intersect(set, [[0, 0x7f]]);
  if (!isEmpty(ascii)) {
    const one = ascii.length === 1 && ascii[0]![0] === ascii[0]![1];
    const first = ascii.flatMap(([lo, hi]) =>
      Array.from({ length: hi - lo + 1 }, (_, i) => lo + i)
    );
    out.push({ text: one ? literal(String.fromCodePoint(first[0]!)) : charClass(ascii), first });
  }
  const high: Box[] = [];
  for (const [lo, hi] of intersect(set, [[0x80, 0x10ffff]])) boxes(lo, hi, high);
  for (const box of merge(high)) cover(box, set, out);
  return out;
}
