/**
 * `parseGuided`'s `json` (the schema's JSON text) and `specGrammar`'s EBNF for it, by Kiln's
 * compiler; a refusal names the keyword and the pointer in Kiln's words (`Guides` makes it
 * `InvalidArgument` naming `...guided_decoding.json`: guides_test.ts). Issue 37's measured failures, end to end through XGrammar's matcher
 * over the bytes: each invalid output XGrammar's own converter let through is refused now, and
 * the schemas it refused needlessly compile.
 */
import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { choiceGrammar, ConstraintRefusal, FIELD, parseGuided, specGrammar } from "./options.ts";
import { compileSchema } from "./schema/compile.ts";
import { byteMatcher } from "./schema/test_grammar.ts";

const ebnfOf = (json: unknown): string => specGrammar(parseGuided({ json }));

Deno.test("json: the schema's EBNF, from an object or its JSON text; true and {} are any value", () => {
  const schema = { type: "object", properties: { a: { type: "integer" } }, required: ["a"] };
  deepStrictEqual(parseGuided({ json: schema }), { key: "json", schema: JSON.stringify(schema) });
  equal(ebnfOf(schema), compileSchema(schema));
  equal(ebnfOf(JSON.stringify(schema)), compileSchema(schema));
  equal(ebnfOf(true), compileSchema(true));
  equal(ebnfOf({}), compileSchema(true));
});

Deno.test("a refused schema names the keyword and the pointer in Kiln's words", () => {
  const refused = (json: unknown, message: string) =>
    throws(() => ebnfOf(json), (e: unknown) => {
      ok(e instanceof ConstraintRefusal, String(e));
      ok(e.message.startsWith(message), e.message);
      ok(!/xgrammar|\[FATAL\]|basic_/i.test(e.message), e.message);
      return true;
    });
  refused({ type: "number", multipleOf: 0.1 }, 'multipleOf at "#/multipleOf": ');
  refused(
    { type: "object", properties: { k: { type: "strin" } } },
    'type at "#/properties/k/type": ',
  );
  refused({ $ref: "#/$defs/nope" }, '$ref at "#/$ref": ');
  refused({ type: "integer", minimum: 5, maximum: 3 }, 'schema at "#": no JSON value satisfies it');
  // The boolean schema false, as a value or as text, is a schema (the corpus's boolean_schema#1).
  refused(false, 'schema at "#": no JSON value satisfies it');
  refused("false", 'schema at "#": no JSON value satisfies it');
  // Refused again, from the memo, the same way.
  refused({ type: "number", multipleOf: 0.1 }, 'multipleOf at "#/multipleOf": ');
  // What cannot be read at all is refused as the request is read, naming the field.
  for (const [json, message] of [["{", "the schema is not JSON"], [3, "expected a JSON Schema"]]) {
    throws(() => parseGuided({ json }), (e: unknown) => {
      ok(e instanceof EngineError && e.type === "InvalidArgument", String(e));
      equal(e.param, `${FIELD}.json`);
      ok(e.message.startsWith(`${FIELD}.json: ${message}`), e.message);
      return true;
    });
  }
});

Deno.test("regex: Kiln's grammar of the whole output, or a refusal in its words", async () => {
  const m = await byteMatcher(specGrammar(parseGuided({ regex: "[a-c]{2}x?" })));
  for (const t of ["ab", "ccx"]) ok(m.accepts(t), t);
  for (const t of ["a", "abxx", "ad", "xab"]) ok(!m.accepts(t), t);
  m.dispose();
  throws(() => specGrammar(parseGuided({ regex: "(a)\\1" })), /: the regex has a backreference/);
  throws(() => specGrammar(parseGuided({ regex: "(" })), /: the regex is not a valid ECMA-262/);
  // Nested past the budget: refused by name, not a stack overflow.
  const deep = `${"(".repeat(5000)}a${")".repeat(5000)}`;
  throws(() => specGrammar(parseGuided({ regex: deep })), /: the regex nests groups more than 200/);
});

Deno.test("a schema nested 100 deep is refused, fast", () => {
  let s: Record<string, unknown> = { type: "integer" };
  for (let d = 0; d < 100; d++) s = { type: "object", properties: { a: s }, required: ["a"] };
  const t0 = performance.now();
  throws(() => ebnfOf(s), /nested more than 64 deep/);
  ok(performance.now() - t0 < 200, `${performance.now() - t0} ms`);
});

/** Issue 37's failures: the schema, an output XGrammar's converter allowed, and a valid one. */
const ISSUE_37: [string, unknown, string, string][] = [
  ["multipleOf", { type: "integer", multipleOf: 3 }, "1640", "1641"],
  [
    "uniqueItems",
    { type: "array", items: { enum: [1, 2] }, uniqueItems: true },
    "[1, 1]",
    "[1, 2]",
  ],
  [
    "allOf of two objects",
    {
      allOf: [{ type: "object", properties: { a: { type: "null" } }, required: ["a"] }, {
        properties: { b: { type: "null" } },
        required: ["b"],
      }],
    },
    "null",
    '{"a": null, "b": null}',
  ],
  ["required, no properties", { type: "object", required: ["a"] }, "{}", '{"a": 1}'],
  ["integer 100 to 120", { type: "integer", minimum: 100, maximum: 120 }, "125", "120"],
  ["not", { type: "integer", not: { const: 3 }, minimum: 2, maximum: 4 }, "3", "4"],
  [
    "if/then/else",
    { type: "integer", if: { minimum: 0 }, then: { maximum: 5 }, else: { minimum: -5 } },
    "7",
    "5",
  ],
  [
    "contains",
    { type: "array", items: { type: "integer" }, contains: { const: 7 } },
    "[1]",
    "[7, 1]",
  ],
  [
    "keywords beside anyOf",
    {
      type: "object",
      properties: { n: { type: "integer" } },
      required: ["n"],
      anyOf: [{ properties: { n: { minimum: 5 } } }],
    },
    '{"n": 1}',
    '{"n": 5}',
  ],
  ["type-specific keyword without type", { minimum: 3 }, "2", '"a string"'],
  ["properties x: false", { type: "object", properties: { x: false } }, '{"x": 1}', "{}"],
  ["top-level true", true, "nul", "null"],
  [
    "number in (0, 1), exclusive",
    { type: "number", exclusiveMinimum: 0, exclusiveMaximum: 1 },
    "1",
    "0.5",
  ],
];

Deno.test("issue 37's failures, through XGrammar: the invalid output refused, a valid one accepted", async () => {
  for (const [name, json, invalid, valid] of ISSUE_37) {
    const m = await byteMatcher(ebnfOf(json));
    ok(!m.accepts(invalid), `${name}: ${invalid} accepted`);
    ok(m.accepts(valid), `${name}: ${valid} refused`);
    m.dispose();
  }
});

Deno.test("choice: each string exactly, whatever it holds, and nothing else", async () => {
  const choices = ['a"b', "c\\d", "e\nf", "\x01a", "é1", "è2", "xpa", "yqa", "yqb", "😀", ""];
  const spec = parseGuided({ choice: choices });
  equal(spec.key, "choice");
  const m = await byteMatcher(choiceGrammar(choices));
  for (const c of choices) ok(m.accepts(c), JSON.stringify(c));
  // What XGrammar 0.1.27 let through: "\x0af" read as U+0AF, "xpa" | "yqa" | "yqb" as xpb.
  for (const c of ["e\xaf", "\x1a", "xpb", "yqc", "é2", "è1", "a", "ab"]) {
    ok(!m.accepts(c), `refuses ${JSON.stringify(c)}`);
  }
  m.dispose();
  throws(() => parseGuided({ choice: ["ok", "\ud800"] }), (e: unknown) => {
    ok(e instanceof EngineError && e.type === "InvalidArgument", String(e));
    ok(e.message.includes("lone surrogate"), e.message);
    return true;
  });
});
