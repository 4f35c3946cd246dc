/**
 * Every keyword of `docs/json_schema.md`'s table, enforced or refused as the table says: each
 * case's grammar (read back from its text, `test_ebnf.ts`) accepts the texts it must and none it
 * must not (and ajv agrees the accepted ones are valid), or the schema is refused naming the
 * keyword and pointer, in Kiln's words (nothing of XGrammar's).
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { Ajv } from "ajv";
import { Ajv2019 } from "ajv/dist/2019.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import { compileSchema } from "./compile.ts";
import { SchemaRefusal } from "./refusal.ts";
import { KEYWORD_CASES } from "./test_cases.ts";
import { derives, parseEbnf } from "./test_ebnf.ts";

const ajv = new Ajv2020({ strict: false, allowUnionTypes: true, validateFormats: false });
const ajv07 = new Ajv({ strict: false, allowUnionTypes: true, validateFormats: false });
const ajv2019 = new Ajv2019({ strict: false, allowUnionTypes: true, validateFormats: false });

/** What no refusal may show: XGrammar's words, rule names, source files. */
const INTERNALS =
  /xgrammar|\[FATAL\]|\.cc\b|basic_|root_|Cannot find field|compileJSONSchema|Unsupported/i;

/** `fn`'s SchemaRefusal. */
function refusalOf(fn: () => unknown): SchemaRefusal {
  try {
    fn();
  } catch (e) {
    if (e instanceof SchemaRefusal) return e;
    throw e;
  }
  throw new Error("not refused");
}

for (const [keyword, cases] of Object.entries(KEYWORD_CASES)) {
  Deno.test(`${keyword}: enforced or refused as the table says`, () => {
    for (const c of cases) {
      const what = JSON.stringify(c.schema).slice(0, 200);
      if (c.refuse !== undefined) {
        const r = refusalOf(() => compileSchema(c.schema));
        deepStrictEqual(
          { keyword: r.keyword, pointer: r.pointer },
          c.refuse,
          `${what}: ${r.message}`,
        );
        ok(r.message.startsWith(`${r.keyword} at "#${r.pointer}": `), r.message);
        ok(!INTERNALS.test(r.message), r.message);
        continue;
      }
      const g = parseEbnf(compileSchema(c.schema));
      const validator = c.draft === "2019" ? ajv2019 : c.draft === "07" ? ajv07 : ajv;
      const validate = c.draft === "04" ? () => true : validator.compile(c.schema as object);
      for (const text of c.accept ?? []) {
        ok(derives(g, text), `${what} should accept ${text}`);
        ok(validate(JSON.parse(text)), `${what}: ${text} is not valid (the case is wrong)`);
      }
      for (const text of c.reject ?? []) ok(!derives(g, text), `${what} should reject ${text}`);
    }
  });
}

Deno.test("the keyword table of docs/json_schema.md and the cases name the same keywords", async () => {
  const doc = await Deno.readTextFile(new URL("../../../../docs/json_schema.md", import.meta.url));
  const table = doc.slice(doc.indexOf("## The keywords"), doc.indexOf("## Numbers"));
  const rows = table.split("\n").filter((l) => l.startsWith("| `") || l.startsWith("| any"));
  const named = rows.flatMap((row) => {
    const first = row.split("|")[1]!;
    return first.includes("any other")
      ? ["any other keyword"]
      : [...first.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
  });
  deepStrictEqual(named.toSorted(), Object.keys(KEYWORD_CASES).toSorted());
  // 2020-12's vocabularies, every keyword.
  const vocab2020 = [
    "$schema",
    "$id",
    "$ref",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$vocabulary",
    "$comment",
    "$defs",
    "prefixItems",
    "items",
    "contains",
    "additionalProperties",
    "properties",
    "patternProperties",
    "dependentSchemas",
    "propertyNames",
    "if",
    "then",
    "else",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "unevaluatedItems",
    "unevaluatedProperties",
    "type",
    "const",
    "enum",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "format",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
  ];
  equal(vocab2020.filter((k) => !named.includes(k)).join(", "), "");
});
