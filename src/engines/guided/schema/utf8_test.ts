/**
 * Code point sets written as UTF-8 for XGrammar, checked byte by byte: XGrammar's own matcher
 * (one token per byte) is walked through every prefix the grammar allows, and at each the bytes
 * it allows next, and whether it may end, are compared with those the set's UTF-8 encodings
 * allow (worked out here from the encoding's arithmetic). So a set is exact: no malformed UTF-8
 * (overlong, surrogate, past U+10FFFF), no code point outside it, none of it missing. Also pins
 * the XGrammar behaviour the writer relies on (a class is a class of bytes).
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import {
  type CharSet,
  complement,
  DOT,
  has,
  intersect,
  normalize,
  SCALARS,
  SPACE,
} from "./charset.ts";
import { Rules } from "./ebnf.ts";
import { parseRegex } from "./regex.ts";
import { byteMatcher } from "./test_grammar.ts";
import { choice } from "./choice.ts";
import { utf8Alts } from "./utf8.ts";

const LENGTH_OF_LEAD = (b: number) =>
  b < 0x80
    ? 1
    : b >= 0xc0 && b < 0xe0
    ? 2
    : b >= 0xe0 && b < 0xf0
    ? 3
    : b >= 0xf0 && b < 0xf8
    ? 4
    : 0;
const MIN = [0, 0, 0x80, 0x800, 0x10000];

/** Whether some code point of `set` has a UTF-8 encoding starting with `prefix`. */
function extendable(set: CharSet, prefix: number[]): boolean {
  const n = LENGTH_OF_LEAD(prefix[0]!);
  if (n === 0 || prefix.length > n) return false;
  if (prefix.slice(1).some((b) => b < 0x80 || b > 0xbf)) return false;
  let lo = n === 1 ? prefix[0]! : prefix[0]! & (0x7f >> n), hi = lo;
  for (let i = 1; i < n; i++) {
    const b = prefix[i];
    lo = (lo << 6) | (b === undefined ? 0 : b & 63);
    hi = (hi << 6) | (b === undefined ? 63 : b & 63);
  }
  lo = Math.max(lo, MIN[n]!); // shorter code points have shorter encodings
  return lo <= hi && set.some(([a, b]) => a <= hi && b >= lo);
}

/** The check: every state's next bytes and end, against the arithmetic. */
async function checkSet(name: string, input: CharSet) {
  const rules = new Rules();
  const m = await byteMatcher(rules.text(choice(rules, utf8Alts(rules, input))));
  const set = intersect(input, SCALARS); // what a model's UTF-8 can hold
  let states = 0;
  const go = async (prefix: number[]) => {
    states++;
    const next = await m.next();
    const want = [];
    for (let b = 0; b < 256; b++) if (extendable(set, [...prefix, b])) want.push(b);
    deepStrictEqual(next.bytes, want, `${name}: after ${prefix.map((b) => b.toString(16))}`);
    const n = prefix.length === 0 ? 0 : LENGTH_OF_LEAD(prefix[0]!);
    const complete = prefix.length > 0 && prefix.length === n && extendable(set, prefix);
    equal(next.end, complete, `${name}: end after ${prefix.map((b) => b.toString(16))}`);
    if (prefix.length >= 3 || complete) return;
    for (const b of want) {
      ok(m.matcher.acceptToken(b));
      await go([...prefix, b]);
      m.matcher.rollBack(1);
    }
  };
  await go([]);
  m.dispose();
  return states;
}

const SETS: [string, CharSet][] = [
  ["every scalar", SCALARS],
  [".", DOT],
  ["\\S", complement(SPACE)],
  ["\\s", SPACE],
  ["[^é]", complement([[0xe9, 0xe9]])],
  ["[à-ÿА-яЁё]", normalize([[0xe0, 0xff], [0x410, 0x44f], [0x401, 0x401], [0x451, 0x451]])],
  ["CJK", [[0x4e00, 0x9fff]]],
  ["lone literals", normalize([[0x1680, 0x1680], [0x2000, 0x2001], [0xe9, 0xe9], [0xeb, 0xeb]])],
  [
    "edges",
    normalize([
      [0x7f, 0x80],
      [0x7ff, 0x800],
      [0xd7ff, 0xd7ff],
      [0xe000, 0xe000],
      [0xffff, 0x10000],
      [0x10ffff, 0x10ffff],
    ]),
  ],
];

Deno.test("UTF-8 sets: XGrammar allows exactly the bytes of the set's encodings, in every state", async () => {
  let states = 0;
  for (const [name, set] of SETS) states += await checkSet(name, set);
  for (const p of ["\\p{Lu}", "\\p{Script=Greek}"]) {
    const tree = parseRegex(`[${p}]`);
    if (tree.kind !== "set") throw new Error(p);
    states += await checkSet(p, tree.set);
  }
  // Random sets: a few ranges of random widths, below U+3000 and from U+1F000 (emoji).
  let seed = 7;
  const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
  for (let i = 0; i < 6; i++) {
    const ranges: [number, number][] = [];
    for (let k = 0; k < 6; k++) {
      const lo = k % 3 === 2 ? 0x1f000 + rand(0x1000) : rand(0x3000);
      ranges.push([lo, lo + [0, 4, 63, 700][rand(4)]!]);
    }
    states += await checkSet(`random ${i}`, normalize(ranges));
  }
  console.log(`${states} matcher states compared`);
});

Deno.test("XGrammar reads a character class as bytes (the writer relies on it)", async () => {
  const m = await byteMatcher("root ::= [\\u2028-\\u2029]");
  ok(m.accepts("("), "a class of code points past 0xFF stands for their low bytes");
  ok(!m.accepts("\u2028"));
  const bytes = await byteMatcher("root ::= [\\xc3\\xc4] [\\xa9\\xaa]");
  ok(bytes.accepts("é"), "two byte classes make é (C3 A9)");
  ok(has(SCALARS, 0xe9));
});
