/**
 * Alternations that XGrammar 0.1.27 reads as written. For each rule it builds a byte automaton
 * of the alternatives and simplifies it; one step merges two states reached from the same state
 * by the same edge ("ab | ac" to "a(b | c)") and, in the same pass, two states with the same
 * single edge to the same state ("ba | ca" to "(b | c)a"), and taking both merges together is
 * unsound: `root ::= "xpa" | "yqa" | "yqb"` accepts `xpb` (the same goes for `"\u1680" |
 * "\u2000" | "\u2001"`, a byte at a time). The first merge needs two alternatives whose first
 * edges are identical. So every alternation Kiln writes goes through {@linkcode choice}: where
 * an alternative could start with the same edge as an earlier one, it is moved into a rule of
 * its own ending in a reference to an empty rule, which XGrammar neither inlines nor looks
 * into (a rule reference is an edge of its own).
 */
import type { Rules } from "./ebnf.ts";

/**
 * One alternative: its EBNF text, and what it starts with: `atom`, the exact first edge when
 * the text begins with one literal or class (`"b:<byte>"` for a literal, `"c:<class>"` for a
 * class), and `bytes`, every byte a string of it may start with (more is safe, fewer is not).
 * `text` `""` is the empty alternative.
 */
export interface Alt {
  text: string;
  bytes: ReadonlySet<number>;
  atom?: string;
}

/** The empty alternative. */
export const EMPTY: Alt = { text: '""', bytes: new Set() };

/** Whether `a` and `b` share an element. */
function meets(a: ReadonlySet<number>, b: ReadonlySet<number>): boolean {
  for (const x of a) if (b.has(x)) return true;
  return false;
}

/**
 * An expression for the alternatives (one term, or a parenthesized alternation), rules added
 * to `rules` for those that must be kept apart. Atoms with different first edges stay in line
 * even when their bytes overlap (the merge needs identical edges); any other alternative stays
 * in line only when its first bytes meet no earlier alternative's.
 */
export function choice(rules: Rules, alts: readonly Alt[]): string {
  const atoms = new Set<string>(), atomBytes = new Set<number>(), otherBytes = new Set<number>();
  const texts: string[] = [];
  let empty = false;
  for (const alt of alts) {
    if (alt.text === '""') {
      empty = true;
      continue;
    }
    const clash = alt.atom !== undefined
      ? atoms.has(alt.atom) || meets(alt.bytes, otherBytes)
      : meets(alt.bytes, otherBytes) || meets(alt.bytes, atomBytes);
    if (clash) {
      texts.push(guard(rules, alt.text));
      continue;
    }
    if (alt.atom !== undefined) atoms.add(alt.atom);
    for (const b of alt.bytes) (alt.atom !== undefined ? atomBytes : otherBytes).add(b);
    texts.push(alt.text);
  }
  if (empty) texts.push('""');
  if (texts.length === 0) throw new Error("choice: no alternative");
  return texts.length === 1 ? texts[0]! : `(${texts.join(" | ")})`;
}

/** `text` in a rule of its own that XGrammar keeps: it ends in a reference to an empty rule. */
export function guard(rules: Rules, text: string): string {
  return rules.add(`${text} ${rules.add('""', "nil")}`, "alt");
}

/** The first bytes of alternatives together (for an alternation used inside another). */
export function firstBytes(alts: readonly Alt[]): Set<number> {
  const out = new Set<number>();
  for (const a of alts) for (const b of a.bytes) out.add(b);
  return out;
}
