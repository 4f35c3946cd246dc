/**
 * XGrammar reads the compiler's grammars as the compiler means them: every grammar of the
 * keyword cases, the edge cases and 150 generated schemas compiles with `compileGrammar`, and
 * XGrammar's own matcher (over the 256 bytes, `test_grammar.ts`) accepts and refuses the same
 * texts as the grammar read back here (`test_ebnf.ts`). Random walks driven by XGrammar's masks
 * (each step a random allowed byte, or the end) never reach a dead end, and what they finish is
 * valid for ajv. And issue 37's integer range: 100 to 120, nothing else.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020.js";
import { compileSchema } from "./compile.ts";
import { SchemaRefusal } from "./refusal.ts";
import { KEYWORD_CASES } from "./test_cases.ts";
import { EDGE_CASES } from "./test_edge_cases.ts";
import { derives, parseEbnf, sample } from "./test_ebnf.ts";
import { type ByteMatcher, byteMatcher } from "./test_grammar.ts";
import { prng, SchemaGen } from "./test_schemas.ts";

const ajv = new Ajv2020({ strict: false, allowUnionTypes: true, validateFormats: false });

/** Compiled by XGrammar, and agreeing with the grammar read back on `texts` and samples. */
async function agree(
  what: string,
  ebnf: string,
  texts: string[],
  random: () => number,
): Promise<ByteMatcher> {
  const m = await byteMatcher(ebnf);
  const g = parseEbnf(ebnf);
  for (let k = 0; k < 5; k++) texts.push(sample(g, random));
  for (const t of texts) equal(m.accepts(t), derives(g, t), `${what}: ${t}`);
  return m;
}

Deno.test("XGrammar compiles every grammar and accepts exactly what it says", async () => {
  const random = prng(11);
  let n = 0;
  for (const [keyword, cases] of Object.entries(KEYWORD_CASES)) {
    for (const c of cases) {
      if (c.refuse !== undefined) continue;
      (await agree(
        keyword,
        compileSchema(c.schema),
        [...c.accept ?? [], ...c.reject ?? []],
        random,
      )).dispose();
      n++;
    }
  }
  for (const [name, schema] of Object.entries(EDGE_CASES)) {
    (await agree(name, compileSchema(schema), [], random)).dispose();
    n++;
  }
  for (let i = 0; i < 150; i++) {
    const schema = new SchemaGen(prng(91_000 + i)).document();
    let ebnf: string;
    try {
      ebnf = compileSchema(schema);
    } catch (e) {
      if (e instanceof SchemaRefusal) continue;
      throw e;
    }
    (await agree(`generated ${i}`, ebnf, [], random)).dispose();
    n++;
  }
  ok(n > 200, `${n} grammars`);
});

Deno.test("walks on XGrammar's masks never reach a dead end; what they finish is valid", async () => {
  const random = prng(5);
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let finished = 0;
  for (const [name, schema] of Object.entries(EDGE_CASES)) {
    const m = await byteMatcher(compileSchema(schema));
    const validate = ajv.compile(schema as object);
    for (let walk = 0; walk < 6; walk++) {
      m.accepts(""); // back to the start
      const bytes: number[] = [];
      for (let step = 0; step < 300; step++) {
        const next = await m.next();
        if (next.bytes.length === 0 && !next.end) {
          throw new Error(
            `${name}: dead end after ${
              JSON.stringify(new TextDecoder().decode(new Uint8Array(bytes)))
            }`,
          );
        }
        if (next.end && (next.bytes.length === 0 || random() < 0.25)) {
          const text = decoder.decode(new Uint8Array(bytes));
          ok(validate(JSON.parse(text)), `${name}: ${text}: ${ajv.errorsText(validate.errors)}`);
          finished++;
          break;
        }
        const b = next.bytes[Math.floor(random() * next.bytes.length)]!;
        ok(m.matcher.acceptToken(b));
        bytes.push(b);
      }
      if (bytes.length > 0) m.matcher.rollBack(bytes.length);
    }
    m.dispose();
  }
  ok(finished > 60, `${finished} walks finished`);
});

Deno.test("issue 37's integer range: 100 to 120 and nothing else (XGrammar's converter let 121-129 pass)", async () => {
  const m = await byteMatcher(compileSchema({ type: "integer", minimum: 100, maximum: 120 }));
  for (let v = -5; v <= 200; v++) equal(m.accepts(String(v)), v >= 100 && v <= 120, String(v));
  m.dispose();
});

Deno.test("lists of values are read as written: XGrammar 0.1.27 merges alternatives that share a first byte unsoundly", async () => {
  const cases: [unknown, string[], string[]][] = [
    [{ enum: ["xpa", "yqa", "yqb"] }, ['"xpa"', '"yqa"', '"yqb"'], ['"xpb"', '"yqc"', '"xqa"']],
    [{ enum: ["a", "ab", "abc", "b"] }, ['"a"', '"ab"', '"abc"', '"b"'], [
      '"abcd"',
      '"bc"',
      '"ac"',
    ]],
    [{ enum: ["é1", "è2", "ê3"] }, ['"é1"', '"è2"', '"ê3"'], ['"é2"', '"è1"', '"ê1"']],
    [
      { anyOf: [{ const: { a: 1 } }, { const: { a: 2, b: 1 } }, { const: { b: 2 } }] },
      ['{"a": 1}', '{"a": 2, "b": 1}', '{"b": 2}'],
      ['{"a": 2}', '{"b": 1}', '{"a": 1, "b": 1}'],
    ],
    [{ enum: [1, 12, 2, 21] }, ["1", "12", "2", "21"], ["11", "22", "121"]],
  ];
  for (const [schema, accept, reject] of cases) {
    const m = await byteMatcher(compileSchema(schema));
    for (const t of accept) ok(m.accepts(t), `${JSON.stringify(schema)} accepts ${t}`);
    for (const t of reject) ok(!m.accepts(t), `${JSON.stringify(schema)} refuses ${t}`);
    m.dispose();
  }
  // Thousands of values cost no rule each.
  const many = Array.from({ length: 5000 }, (_, i) => `value-${i}`);
  const ebnf = compileSchema({ enum: many });
  ok(ebnf.split("\n").length < 200, `${ebnf.split("\n").length} rules for 5,000 values`);
  const m = await byteMatcher(ebnf);
  ok(m.accepts('"value-4999"') && m.accepts('"value-0"'));
  ok(!m.accepts('"value-5000"') && !m.accepts('"value-"'));
  m.dispose();
});
