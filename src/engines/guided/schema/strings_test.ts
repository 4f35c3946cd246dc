/**
 * String grammars checked against JavaScript's own `RegExp` (the `u` flag) through XGrammar's
 * matcher over a one-byte-per-token vocabulary: for every string of up to a few code points over
 * an alphabet of the pattern's characters and `"`, `\`, tab and a non-BMP character, the grammar
 * accepts `JSON.stringify(s)` exactly when the pattern (and the length bounds) allow `s`, both
 * when it is written from the pattern's tree and through the automaton; and every JSON text the
 * grammar accepts over an alphabet of escapes parses to an allowed string, in its canonical form.
 * The guided `regex` grammar is checked the same way on raw strings, whole-match.
 */
import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { Rules } from "./ebnf.ts";
import { SchemaRefusal } from "./refusal.ts";
import { jsonLiteral, jsonStringExpr, regexGrammar, type StringConstraints } from "./strings.ts";
import { byteMatcher, walkAccepted, walkStrings } from "./test_grammar.ts";

const SPECIALS = ['"', "\\", "\t", "😀"];
/** Pieces of JSON text: escapes' parts, raw controls, letters. */
const TEXT_PIECES = ['"', "\\", "\\u00", "1", "f", "n", "a", "\t", "\n", "😀"];

/** [pattern, the characters it is about (specials are added), depth]. */
const PATTERNS: [string, string, number?][] = [
  ["abc", "abc"],
  ["", "a"],
  ["^abc$", "abc"],
  ["^a*$", "ab"],
  ["a|b$", "ab"],
  ["^(a|bc)+$", "abc"],
  ["^[^a]$", "ab"],
  ["^.$", "a\n\r\u2028"],
  ["^\\s+$", " \u00a0\ufeffa"],
  ["^\\S\\D\\W$", " a1_"],
  ["\\d{2}", "0a"],
  ["^\\w\\W$", "a_-"],
  ["^[\\b]\\cJ$", "\b\na"],
  ["^\\t?\\n?\\r?\\f?\\v?\\0?$", "\t\n\r\f\v\0", 6],
  ["^\\x41\\u0042\\u{43}$", "ABC", 3],
  ["^\\uD83D\\uDE00+$", "😀\uD83D"],
  ["^[😀-😂]$", "😀😁😂😃"],
  ["^\\p{Lu}\\P{L}?$", "aAÀé1 "],
  ["(^a|b)c", "abc"],
  ["^$", "a"],
  ["$^", "a"],
  ["(a|^)b", "ab"],
  ["^(a$|b)c?", "abc"],
  ["^a{2,3}$", "a"],
  ["^(ab){2}$", "ab"],
  ["^(a?){3}b$", "ab"],
  ["((a+)+)+$", "ab"],
  ["^[a-c]{0,3}?$", "abcd", 5],
  ["^(?:a|b)*?c$", "abc"],
  ["^(?<n>a)b$", "ab"],
  ["^[\\-\\]^]$", "-]^a"],
  ['"', "a"],
  ["\\\\", "a"],
  ["^[\\s\\S]$", "a\n"],
  ["^[^]$", "a\n"],
  ["[]|a", "ab"],
  ["^(\\uD800|a)$", "a"],
  ["^[^\\uD800]$", "a"],
  ['^[\\t"\\\\]{2}$', "a"],
  // XGrammar 0.1.27 merges these wrongly when written as plain alternatives (see choice.ts).
  ["^(xpa|yqa|yqb)$", "xypqab", 3],
  ["^[\u1680\u2000\u2001]x?$", "\u1680\u2000\u2001\u2002x", 3],
  ["^(é|ê|ë)(a|ab|b)$", "éêëab", 3],
];

/** The code points of `chars` and the specials, each once. */
const alphabet = (chars: string) => [...new Set([...chars, ...SPECIALS])];

/** `c`'s string grammar (root: the JSON text) and its matcher. */
async function stringMatcher(c: StringConstraints, automaton = false) {
  const rules = new Rules();
  return await byteMatcher(rules.text(jsonStringExpr(rules, c, "", { automaton })));
}

/** The exact check: values by JSON text, and texts by what they parse to. */
async function checkExact(c: StringConstraints, chars: string, depth: number, automaton: boolean) {
  const re = c.pattern === undefined ? undefined : new RegExp(c.pattern, "u");
  const allowed = (s: string) => {
    const n = [...s].length;
    return (re?.test(s) ?? true) && n >= (c.minLength ?? 0) && n <= (c.maxLength ?? Infinity);
  };
  const m = await stringMatcher(c, automaton);
  let values = 0, accepted = 0;
  const encode = (ch: string) => JSON.stringify(ch).slice(1, -1);
  walkStrings(m, alphabet(chars), depth, '"', encode, '"', (s, yes) => {
    values++;
    if (yes !== allowed(s)) {
      throw new Error(`${JSON.stringify(c)}: ${JSON.stringify(s)} ${yes ? "accepted" : "refused"}`);
    }
  });
  walkAccepted(m, TEXT_PIECES, 5, (text) => {
    accepted++;
    const s = JSON.parse(text);
    ok(typeof s === "string" && allowed(s), `${JSON.stringify(c)}: accepted text ${text}`);
    equal(text, JSON.stringify(s), "only the canonical text");
  });
  m.dispose();
  return { values, accepted };
}

Deno.test("patterns: the grammar's strings are exactly the RegExp's (u flag), both ways, canonical JSON", async () => {
  let values = 0, texts = 0;
  for (const [pattern, chars, depth = 4] of PATTERNS) {
    for (const automaton of [false, true]) {
      try {
        const r = await checkExact({ pattern }, chars, depth, automaton);
        values += r.values, texts += r.accepted;
      } catch (e) {
        throw new Error(
          `${pattern} (${automaton ? "automaton" : "tree"}): ${(e as Error).message}`,
        );
      }
    }
  }
  console.log(
    `${PATTERNS.length} patterns x 2 ways: ${values} strings compared, ${texts} texts parsed`,
  );
});

Deno.test("lengths alone and with patterns: counted in code points, exactly", async () => {
  const cases: [StringConstraints, string][] = [
    [{ maxLength: 3 }, "a"],
    [{ minLength: 2, maxLength: 4 }, "a"],
    [{ minLength: 3 }, "a"],
    [{ maxLength: 0 }, "a"],
    [{ pattern: "^a*$", maxLength: 3 }, "ab"],
    [{ pattern: "b", minLength: 2, maxLength: 3 }, "ab"],
    [{ pattern: "^[ab]+$", minLength: 2 }, "abc"],
    [{ pattern: "^[ab]{1,3}$", minLength: 2, maxLength: 5 }, "ab"],
    [{ pattern: "^a|b$", maxLength: 2 }, "ab"],
    [{ pattern: "(^a|b)c", minLength: 3 }, "abc"],
    [{ pattern: "^[ab]+c$", maxLength: 3 }, "abc"],
    [{ pattern: "^x(ab){2}[ab]*$", minLength: 6, maxLength: 7 }, "xab"],
    [{ pattern: "^(a|bc)[ab]?$", minLength: 2 }, "abc"],
  ];
  for (const [c, chars] of cases) {
    for (const automaton of [false, true]) await checkExact(c, chars, 5, automaton);
  }
});

Deno.test("refused by name: no string allowed, bad lengths", () => {
  const refuse = (c: StringConstraints, keyword: string, why: RegExp) =>
    throws(() => jsonStringExpr(new Rules(), c, "/p"), (e) => {
      ok(e instanceof SchemaRefusal, String(e));
      equal(e.keyword, keyword);
      equal(e.pointer, "/p");
      ok(why.test(e.why), e.why);
      return true;
    });
  for (const pattern of ["a^b", "a$b", "^[]$", "^\\uD800$", "[\\uD800-\\uDFFF]"]) {
    refuse({ pattern }, "pattern", /no string a model can write/);
  }
  refuse({ pattern: "^ab$", maxLength: 1 }, "maxLength", /no string/);
  refuse({ pattern: "^a{5}$", minLength: 6 }, "minLength", /no string/);
  refuse({ pattern: "^\\d{3}-\\d{4}$", minLength: 9 }, "minLength", /no string/);
  refuse({ pattern: "^[a-z]+[0-9]+$", maxLength: 300 }, "maxLength", /automaton has \d+ states/);
  refuse({ minLength: 3, maxLength: 2 }, "minLength", /more than maxLength/);
  refuse({ maxLength: -1 }, "maxLength", /non-negative integer/);
  refuse({ minLength: 1.5 }, "minLength", /non-negative integer/);
});

Deno.test("guided regex: the whole output matches, raw, both ways", async () => {
  let compared = 0;
  for (const [pattern, chars, depth = 4] of PATTERNS) {
    if (/^\^\[\]\$|a\^b|\\uD800\$/.test(pattern)) continue;
    const whole = new RegExp(`^(?:${pattern})$`, "u");
    for (const automaton of [false, true]) {
      const m = await byteMatcher(regexGrammar(pattern, { automaton }));
      walkStrings(m, alphabet(chars), depth, "", (ch) => ch, "", (s, yes) => {
        compared++;
        if (yes !== whole.test(s)) throw new Error(`${pattern}: ${JSON.stringify(s)} ${yes}`);
      });
      m.dispose();
    }
  }
  console.log(`${compared} raw strings compared`);
});

Deno.test("jsonLiteral: JSON.stringify's text, read back by XGrammar exactly", async () => {
  const values = [
    'a"b\\c',
    "\t\n\r\b\f\u0000\u001f\u007f",
    "\u2028\u2029é😀",
    "\uD800 lone \uDFFF",
    "",
    0,
    -1.5e-7,
    1e21,
    true,
    null,
    [1, "x", { 'k"': [] }],
    { a: { "\\": "\n" } },
  ];
  for (const v of values) {
    const m = await byteMatcher(`root ::= ${jsonLiteral(v)}`);
    const text = JSON.stringify(v);
    ok(m.accepts(text), text);
    deepStrictEqual(JSON.parse(text), v);
    ok(!m.accepts(`${text} `) && !m.accepts(text.slice(0, -1)), text);
    m.dispose();
  }
  throws(() => jsonLiteral(undefined), TypeError);
});
