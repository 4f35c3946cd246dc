/**
 * For tests: each JSON Schema keyword's cases: schemas using it, texts the compiled grammar must
 * accept and texts it must not, or the refusal expected (keyword and pointer). Keyed by the
 * keyword names of `docs/json_schema.md`'s table, so a keyword listed there has cases here
 * (the validation, content, meta-data and older keywords' in `test_cases_validation.ts`).
 */

import { CORE_CASES } from "./test_cases_core.ts";
import { type KeywordCase, VALIDATION_CASES } from "./test_cases_validation.ts";

/** One case (see `test_cases_validation.ts`). */
export type { KeywordCase };

export const KEYWORD_CASES: Record<string, KeywordCase[]> = {
  ...CORE_CASES,
  allOf: [
    {
      schema: {
        allOf: [{ type: "object", properties: { a: { type: "integer" } }, required: ["a"] }, {
          properties: { b: { type: "boolean" } },
          required: ["b"],
        }],
      },
      accept: ['{"a": 1, "b": true}'],
      reject: ["null", '{"a": 1}', '{"b": true}'],
    },
    {
      schema: { allOf: [{ minimum: 2 }, { maximum: 4 }, { type: "integer" }] },
      accept: ["2", "4"],
      reject: ["1", "5", "3.5"],
    },
    {
      schema: { allOf: [{ type: "string", pattern: "^a" }, { type: "string", pattern: "b$" }] },
      refuse: { keyword: "pattern", pointer: "/allOf/1/pattern" },
    },
  ],
  anyOf: [
    {
      schema: { anyOf: [{ type: "null" }, { type: "integer", minimum: 3 }] },
      accept: ["null", "3"],
      reject: ["2", "true"],
    },
    {
      schema: {
        type: "object",
        properties: { k: { type: "integer" } },
        required: ["k"],
        anyOf: [{ properties: { k: { minimum: 5 } } }, { properties: { k: { maximum: -5 } } }],
      },
      accept: ['{"k": 5}', '{"k": -5}'],
      reject: ['{"k": 0}', "{}"],
    },
  ],
  oneOf: [
    {
      schema: { oneOf: [{ type: "string", maxLength: 1 }, { type: "integer" }] },
      accept: ['"a"', "1"],
      reject: ["null"],
    },
    {
      schema: { oneOf: [{ type: "integer", minimum: 0 }, { type: "integer", maximum: 10 }] },
      accept: ["11", "-1"],
      reject: ["0", "5", "10"],
    },
    {
      schema: {
        oneOf: [
          {
            type: "object",
            properties: { t: { const: "a" }, x: { type: "integer" } },
            required: ["t", "x"],
            additionalProperties: false,
          },
          {
            type: "object",
            properties: { t: { const: "b" }, y: { type: "boolean" } },
            required: ["t", "y"],
            additionalProperties: false,
          },
        ],
      },
      accept: ['{"t": "a", "x": 1}', '{"t": "b", "y": true}'],
      reject: ['{"t": "a", "y": true}'],
    },
    {
      schema: { oneOf: [{ type: "integer", multipleOf: 2 }, { type: "integer", multipleOf: 3 }] },
      refuse: { keyword: "oneOf", pointer: "/oneOf" },
    },
  ],
  not: [
    {
      schema: { type: "number", not: { type: "integer" }, minimum: -1, maximum: 0.05 },
      accept: ["0.05", "-0.5", "0.01"],
      reject: ["0", "0.0", "-1", "0.06"],
    },
    { schema: { not: { type: "null" } }, accept: ["1", '"x"', "[]"], reject: ["null"] },
    {
      schema: { type: "integer", minimum: 0, maximum: 5, not: { const: 3 } },
      accept: ["2", "4"],
      reject: ["3"],
    },
    {
      schema: { type: "object", properties: { a: { type: "integer" } }, not: { required: ["a"] } },
      accept: ["{}"],
      reject: ['{"a": 1}'],
    },
    {
      schema: { type: "integer", not: { multipleOf: 2 } },
      refuse: { keyword: "not", pointer: "/not" },
    },
    {
      schema: { type: "string", not: { const: "a" } },
      refuse: { keyword: "not", pointer: "/not" },
    },
  ],
  if: [
    {
      schema: {
        if: { type: "integer" },
        then: { minimum: 5 },
        else: { type: "string", maxLength: 1 },
      },
      accept: ["5", '"a"'],
      reject: ["4", "null", '"ab"'],
    },
    { schema: { type: "integer", if: { minimum: 3 } }, accept: ["1", "9"] },
    {
      schema: {
        if: { type: "string", pattern: "a" },
        then: { type: "string" },
        else: { type: "integer" },
      },
      refuse: { keyword: "if", pointer: "/if" },
    },
  ],
  then: [{ schema: { type: "integer", then: { minimum: 3 } }, accept: ["1"] }],
  else: [{ schema: { type: "integer", else: { minimum: 3 } }, accept: ["1"] }],
  properties: [
    { schema: { type: "object", properties: {} }, accept: ["{}"], reject: ['{"a": 1}'] },
    {
      schema: { type: "object", properties: { a: { type: "boolean" } } },
      accept: ["{}", '{"a": true}'],
      reject: ['{"a": 1}', '{"b": 1}'],
    },
    {
      schema: { type: "object", properties: { x: false, y: { type: "null" } } },
      accept: ["{}", '{"y": null}'],
      reject: ['{"x": 1}'],
    },
  ],
  additionalProperties: [
    {
      schema: {
        type: "object",
        properties: { a: { type: "null" } },
        additionalProperties: { type: "integer" },
      },
      accept: ['{"a": null, "b": 1}', '{"b": 2}'],
      reject: ['{"a": 1}', '{"b": null}'],
    },
    {
      schema: { type: "object", properties: { a: { type: "null" } }, additionalProperties: false },
      accept: ['{"a": null}'],
      reject: ['{"b": 1}'],
    },
    { schema: { type: "object" }, accept: ["{}", '{"any": [1, {"x": null}]}'], reject: ["[]"] },
  ],
  patternProperties: [
    {
      schema: {
        type: "object",
        properties: { ab: { type: "integer" } },
        patternProperties: { "^a": { minimum: 5 } },
      },
      accept: ['{"ab": 5}'],
      reject: ['{"ab": 4}'],
    },
    {
      schema: { type: "object", patternProperties: { "^x-": {} }, additionalProperties: true },
      refuse: { keyword: "patternProperties", pointer: "/patternProperties/^x-" },
    },
    {
      schema: { type: "object", patternProperties: { "(": {} } },
      refuse: { keyword: "patternProperties", pointer: "/patternProperties" },
    },
  ],
  propertyNames: [
    {
      schema: {
        type: "object",
        propertyNames: { enum: ["a", "b"] },
        additionalProperties: { type: "null" },
      },
      accept: ['{"a": null, "b": null}', "{}"],
      reject: ['{"c": null}'],
    },
    {
      schema: {
        type: "object",
        properties: { ab: { type: "null" }, c: { type: "null" } },
        propertyNames: { maxLength: 1 },
      },
      accept: ['{"c": null}'],
      reject: ['{"ab": null}'],
    },
    {
      schema: { type: "object", propertyNames: { maxLength: 2 }, additionalProperties: true },
      refuse: { keyword: "propertyNames", pointer: "/propertyNames" },
    },
  ],
  dependentSchemas: [
    {
      schema: {
        type: "object",
        properties: { a: { type: "null" }, b: { type: "null" } },
        dependentSchemas: { a: { required: ["b"] } },
      },
      accept: ["{}", '{"b": null}', '{"a": null, "b": null}'],
      reject: ['{"a": null}'],
    },
  ],
  prefixItems: [
    {
      schema: {
        type: "array",
        prefixItems: [{ type: "integer" }, { type: "string", maxLength: 0 }],
      },
      accept: ["[]", "[1]", '[1, ""]'],
      reject: ['["a"]', '[1, "", 2]'],
    },
    {
      schema: { type: "array", prefixItems: [{ type: "null" }], minItems: 3 },
      accept: ["[null, 1, {}]"],
      reject: ["[null]", "[null, 1, 2, 3]"],
    },
  ],
  items: [
    {
      schema: { type: "array", items: { type: "boolean" } },
      accept: ["[]", "[true, false, true]"],
      reject: ["[1]", "[true,false]"],
    },
    {
      schema: { type: "array", prefixItems: [{ type: "null" }], items: { type: "integer" } },
      accept: ["[null, 1, 2]"],
      reject: ["[1]"],
    },
    {
      schema: { type: "array", items: [{ type: "null" }], additionalItems: { type: "integer" } },
      accept: ["[null, 3]"],
      reject: ["[1]"],
      draft: "07",
    },
  ],
  contains: [
    {
      schema: { type: "array", items: { type: "integer" }, contains: { minimum: 5 } },
      accept: ["[5]", "[7, 1, 2]"],
      reject: ["[]", "[1]"],
    },
  ],
  unevaluatedProperties: [
    {
      schema: {
        allOf: [{ type: "object", properties: { a: { type: "null" } } }],
        properties: { b: { type: "null" } },
        required: ["c"],
        unevaluatedProperties: { type: "integer" },
      },
      accept: ['{"b": null, "a": null, "c": 1}', '{"c": 2}'],
      reject: ['{"c": null}'],
    },
    {
      schema: {
        type: "object",
        properties: { a: true },
        required: ["z"],
        unevaluatedProperties: false,
      },
      refuse: { keyword: "schema", pointer: "" },
    },
  ],
  unevaluatedItems: [
    {
      schema: {
        type: "array",
        prefixItems: [{ type: "null" }],
        minItems: 2,
        unevaluatedItems: { type: "boolean" },
      },
      accept: ["[null, true]"],
      reject: ["[null, 1]"],
    },
  ],
  schema: [
    { schema: { enum: [] }, refuse: { keyword: "schema", pointer: "" } },
    {
      schema: { $ref: "#/$defs/no", $defs: { no: false } },
      refuse: { keyword: "schema", pointer: "" },
    },
    {
      schema: { type: "integer", minimum: 5, maximum: 3 },
      refuse: { keyword: "schema", pointer: "" },
    },
  ],
  ...VALIDATION_CASES,
};
