/**
 * Hostile patterns (quotes, backslashes, control characters, non-BMP characters, lone
 * surrogates, nested quantifiers, huge counts, huge sets): each is either refused by name or
 * compiled to a grammar XGrammar takes, in every state of which (walked over escapes, controls
 * and letters) the grammar allows no raw control byte and is never at a dead end. Budgets are
 * refused with the keyword that asked for too much.
 */
import { ok } from "node:assert/strict";
import { Rules } from "./ebnf.ts";
import { SchemaRefusal } from "./refusal.ts";
import { jsonStringExpr, regexGrammar, type StringConstraints } from "./strings.ts";
import { byteMatcher, walkStates } from "./test_grammar.ts";

/** [constraints, what happens: "ok", or the keyword refused and a word of the reason]. */
const HOSTILE: [StringConstraints, string, RegExp?][] = [
  [{ pattern: '"' }, "ok"],
  [{ pattern: '^"\\\\"$' }, "ok"],
  [{ pattern: "^[\\x00-\\x1f]+$" }, "ok"],
  [{ pattern: "^\\t$" }, "ok"],
  [{ pattern: "[^\\x20-\\uffff]" }, "ok"],
  [{ pattern: "^\\u{10FFFF}\\u{1F600}{2}$" }, "ok"],
  [{ pattern: "^[\\s\\S]*$" }, "ok"],
  [{ pattern: "((a+)+)+b" }, "ok"],
  [{ pattern: "^(a|a?)+$" }, "ok"],
  [{ pattern: "^(a*)*$" }, "ok"],
  [{ pattern: "^(?:a{1000}){1000}$" }, "ok"],
  [{ pattern: "^a{1000000000}$" }, "ok"],
  [{ pattern: "^.{0,100000}$" }, "ok"],
  [{ maxLength: 1_000_000, minLength: 999_999 }, "ok"],
  [{ pattern: "^\\p{Lu}+$" }, "ok"],
  [{ pattern: "^\\p{L}+$" }, "pattern", /too large/],
  [{ pattern: "^\\uD800$" }, "pattern", /lone surrogate/],
  [{ pattern: "\\uDC00" }, "pattern", /lone surrogate/],
  [{ pattern: "(a)\\1" }, "pattern", /backreference/],
  [{ pattern: "(?<n>a)\\k<n>" }, "pattern", /backreference/],
  [{ pattern: "a(?=b)" }, "pattern", /lookahead/],
  [{ pattern: "(?<!a)b" }, "pattern", /lookbehind/],
  [{ pattern: "\\bword\\b" }, "pattern", /word boundary/],
  [{ pattern: "(?i:a)" }, "pattern", /modifier/],
  [{ pattern: "[" }, "pattern", /not a valid/],
  [{ pattern: "\\a" }, "pattern", /not a valid/],
  [{ pattern: "^(?:a{1000}){1000}$", maxLength: 5 }, "maxLength", /no string/],
  [{ pattern: "^(?:a{1000}){1000}b?$", maxLength: 2_000_000 }, "ok"],
  [{ pattern: "^(?:a{1000}){1000}(b|cd)?$", maxLength: 2_000_000 }, "maxLength", /too large/],
  [{ pattern: "a.{30}$" }, "ok"],
  [{ pattern: "a.{30}$", maxLength: 40 }, "maxLength", /too large/],
  [{ pattern: "^[\\u{10000}-\\u{1FFFF}]$" }, "pattern", /too large/],
  [{ format: "email", maxLength: 254 }, "maxLength", /too large/],
];

async function checkStates(ebnf: string, json: boolean, what: string) {
  const m = await byteMatcher(ebnf);
  const pieces = json
    ? ['"', "\\", "u", "0", "a", "\t", "\n", "\x00", "😀", "é"]
    : ["a", "\t", '"', "\\", "😀"];
  let states = 0;
  await walkStates(m, pieces, 3, (text, next) => {
    states++;
    ok(next.bytes.length > 0 || next.end, `${what}: a dead end after ${JSON.stringify(text)}`);
    if (json) {
      ok(
        next.bytes.every((b) => b >= 0x20),
        `${what}: a raw control after ${JSON.stringify(text)}`,
      );
    }
  });
  m.dispose();
  return states;
}

Deno.test("hostile patterns: refused by name, or a grammar XGrammar takes with no raw control and no dead end", async () => {
  let states = 0, compiled = 0;
  for (const [c, want, why] of HOSTILE) {
    const what = JSON.stringify(c);
    let ebnf: string | undefined;
    try {
      const rules = new Rules();
      ebnf = rules.text(jsonStringExpr(rules, c, "/s"));
    } catch (e) {
      ok(e instanceof SchemaRefusal, `${what}: ${e}`);
      ok(want === e.keyword && (why === undefined || why.test(e.why)), `${what}: ${e.message}`);
      continue;
    }
    ok(want === "ok", `${what}: compiled, not refused (${want})`);
    states += await checkStates(ebnf, true, what);
    compiled++;
    if (c.pattern !== undefined && c.maxLength === undefined && c.minLength === undefined) {
      states += await checkStates(regexGrammar(c.pattern), false, `regex ${what}`);
    }
  }
  console.log(`${HOSTILE.length} hostile schemas: ${compiled} compiled, ${states} states walked`);
});
