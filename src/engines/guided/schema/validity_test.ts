/**
 * The compiler's grammars accept only valid instances: for hand-written edge cases (the
 * failures issue 37 measured with XGrammar's converter among them) and 500 generated schemas
 * (`test_schemas.ts`), strings drawn at random from the grammar text (`test_ebnf.ts`) all parse
 * as JSON and are valid for ajv's 2020-12 validator (`ajv/dist/2020.js`), which shares no code
 * with the compiler.
 */
import { ok } from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020.js";
import { compileSchema } from "./compile.ts";
import { SchemaRefusal } from "./refusal.ts";
import { parseEbnf, sample } from "./test_ebnf.ts";
import { EDGE_CASES } from "./test_edge_cases.ts";
import { prng, SchemaGen } from "./test_schemas.ts";

const ajv = new Ajv2020({ strict: false, allowUnionTypes: true, validateFormats: false });
const SAMPLES = 25;

function check(name: string, schema: unknown, seed: number): void {
  const grammar = parseEbnf(compileSchema(schema));
  const validate = ajv.compile(schema as object);
  const random = prng(seed);
  for (let k = 0; k < SAMPLES; k++) {
    const text = sample(grammar, random);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new Error(`${name}: ${JSON.stringify(text)} is not JSON`);
    }
    ok(
      validate(value),
      `${name}: ${text}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(schema)}`,
    );
  }
}

Deno.test("edge cases: every sampled instance is valid (ajv 2020-12)", () => {
  let seed = 1;
  for (const [name, schema] of Object.entries(EDGE_CASES)) check(name, schema, seed++);
});

Deno.test("500 generated schemas: every sampled instance of those compiled is valid (ajv 2020-12)", () => {
  let compiled = 0, refused = 0;
  for (let i = 0; i < 500; i++) {
    const schema = new SchemaGen(prng(37_000 + i)).document();
    try {
      compileSchema(schema);
    } catch (e) {
      if (!(e instanceof SchemaRefusal)) throw e;
      refused++;
      continue;
    }
    check(`generated ${i}`, schema, i);
    compiled++;
  }
  console.log(`${compiled} compiled and sampled, ${refused} refused`);
  ok(compiled >= 300, `only ${compiled} of 500 compiled`);
});
