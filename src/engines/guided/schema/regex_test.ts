/**
 * The pattern parser (ECMA-262, `u` flag) and the automata: escapes and classes read as the
 * runtime's `RegExp` reads them (`\p{...}` against every code point below U+20000), what is
 * refused by name, and the automata's sizes, counted sets and budgets.
 */
import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { BUDGET, countedSet, regexDfa, withLength } from "./automaton.ts";
import { ANY, type CharSet, DOT, has, SPACE } from "./charset.ts";
import { parseRegex, PatternRefusal, type Regex } from "./regex.ts";

const setOf = (pattern: string): CharSet => {
  const tree = parseRegex(pattern);
  if (tree.kind !== "set") throw new Error(`${pattern}: ${tree.kind}`);
  return tree.set;
};

Deno.test("escapes and classes: the code points RegExp (u flag) reads", () => {
  deepStrictEqual(setOf("[\\b]"), [[8, 8]]);
  deepStrictEqual(setOf("\\cJ"), [[10, 10]]);
  deepStrictEqual(setOf("\\0"), [[0, 0]]);
  deepStrictEqual(setOf("\\v"), [[11, 11]]);
  deepStrictEqual(setOf("\\u{1F600}"), [[0x1f600, 0x1f600]]);
  deepStrictEqual(setOf("\\uD83D\\uDE00"), [[0x1f600, 0x1f600]], "a pair is one code point");
  deepStrictEqual(setOf("[\\uD83D\\uDE00-\\uD83D\\uDE02]"), [[0x1f600, 0x1f602]]);
  deepStrictEqual(setOf("\\uD83D"), [[0xd83d, 0xd83d]], "a lone surrogate is itself");
  deepStrictEqual(setOf("[^]"), ANY);
  deepStrictEqual(setOf("[]"), []);
  deepStrictEqual(setOf("."), DOT);
  deepStrictEqual(setOf("\\s"), SPACE);
  deepStrictEqual(setOf("[\\-\\]\\^]"), [[0x2d, 0x2d], [0x5d, 0x5e]]);
  deepStrictEqual(setOf("\\/"), [[0x2f, 0x2f]]);
  // Every class against RegExp on the first 0x3000 code points and a sample past them.
  for (
    const p of [
      ".",
      "\\s",
      "\\S",
      "\\w",
      "\\W",
      "\\d",
      "\\D",
      "[^a-z\\s]",
      "[\\w\\-.]",
      "[^\\d\\D]",
    ]
  ) {
    const set = setOf(p), re = new RegExp(`^${p}$`, "u");
    for (let cp = 0; cp < 0x110000; cp += cp < 0x3000 ? 1 : 97) {
      equal(has(set, cp), re.test(String.fromCodePoint(cp)), `${p} at U+${cp.toString(16)}`);
    }
  }
});

Deno.test("\\p{...}: exactly this runtime's RegExp, every code point below U+20000", () => {
  for (
    const p of ["\\p{L}", "\\P{Lu}", "\\p{Script=Greek}", "\\p{N}", "[\\p{Ll}\\d]", "[^\\p{L}]"]
  ) {
    const set = setOf(p), re = new RegExp(`^${p}$`, "u");
    for (let cp = 0; cp < 0x20000; cp++) {
      if (has(set, cp) !== re.test(String.fromCodePoint(cp))) {
        throw new Error(
          `${p} at U+${cp.toString(16)}`,
        );
      }
    }
  }
});

Deno.test("structure: groups, quantifiers (lazy ones the same), anchors", () => {
  const a: Regex = { kind: "set", set: [[0x61, 0x61]] };
  deepStrictEqual(parseRegex("a{2,}?"), { kind: "repeat", node: a, min: 2, max: Infinity });
  deepStrictEqual(parseRegex("(?<x>a)"), a);
  deepStrictEqual(parseRegex("(?:a)*?"), parseRegex("a*"));
  deepStrictEqual(parseRegex("^a$"), {
    kind: "seq",
    items: [{ kind: "start" }, a, { kind: "end" }],
  });
  deepStrictEqual(parseRegex("a|"), { kind: "alt", alts: [a, { kind: "seq", items: [] }] });
});

Deno.test("refused by name: what no regular language holds exactly, and bad syntax", () => {
  const cases: [string, RegExp][] = [
    ["(a)\\1", /backreference/],
    ["(?<n>a)\\k<n>", /named backreference/],
    ["a(?=b)", /lookahead/],
    ["a(?!b)", /lookahead/],
    ["(?<=a)b", /lookbehind/],
    ["(?<!a)b", /lookbehind/],
    ["\\b", /word boundary/],
    ["\\B", /non-word-boundary/],
    ["(?i:a)", /modifier group/],
    ["(", /not a valid ECMA-262/],
    ["a{2,1}", /not a valid ECMA-262/],
    ["\\a", /not a valid ECMA-262/],
    ["]", /not a valid ECMA-262/],
  ];
  for (const [pattern, why] of cases) {
    throws(
      () => parseRegex(pattern),
      (e) => e instanceof PatternRefusal && why.test(e.why),
      pattern,
    );
  }
});

Deno.test("automata: minimal, counted sets found, budgets refused", () => {
  const dfa = (p: string, anchored = true) => regexDfa(parseRegex(p), anchored);
  equal(dfa("(a|b)*abb").accept.length, 4, "the textbook minimal automaton");
  equal(dfa("abc", false).accept.length, 4, "contains abc");
  deepStrictEqual(countedSet(dfa("[a-c]{2,5}")), { set: [[0x61, 0x63]], min: 2, max: 5 });
  deepStrictEqual(countedSet(dfa("(a|b)(a|b)+")), { set: [[0x61, 0x62]], min: 2, max: Infinity });
  equal(countedSet(dfa("a+b")), undefined);
  equal(withLength(dfa("[ab]*c"), 2, 3).accept.length, 4);
  throws(
    () => dfa("(a|b)*a(a|b){12}"),
    (e) => e instanceof PatternRefusal && /deterministic automaton passes 4000 states/.test(e.why),
  );
  throws(
    () => dfa(`a{${BUDGET.nfaStates + 1}}`),
    (e) => e instanceof PatternRefusal && /too large/.test(e.why),
  );
  ok(dfa("a^b").accept.every((a) => !a), "an anchor in the middle: nothing");
  ok(dfa("$^").accept[0], "both anchors: the empty string");
});
