/**
 * For tests: schemas that must compile, by name: issue 37's measured failures of XGrammar's
 * converter and its needless refusals, and shapes seen in the wild (tool calls, recursion,
 * discriminated unions).
 */
export const EDGE_CASES: Record<string, unknown> = {
  "allOf of two objects": {
    allOf: [
      { type: "object", properties: { a: { type: "integer" } }, required: ["a"] },
      { type: "object", properties: { b: { type: "string", maxLength: 3 } }, required: ["b"] },
    ],
  },
  "if/then/else": {
    type: "object",
    properties: { kind: { enum: ["n", "s"] }, v: {} },
    required: ["kind", "v"],
    if: { properties: { kind: { const: "n" } } },
    then: { properties: { v: { type: "integer", minimum: 0 } } },
    else: { properties: { v: { type: "string", maxLength: 4 } } },
  },
  "not": { type: ["integer", "null"], minimum: -3, maximum: 3, not: { enum: [0, null] } },
  "contains": {
    type: "array",
    items: { type: "integer", minimum: 0, maximum: 9 },
    contains: { minimum: 8 },
    minContains: 2,
    maxContains: 2,
    maxItems: 5,
  },
  "uniqueItems": {
    type: "array",
    items: { enum: ["a", "b", 1, null, [1]] },
    uniqueItems: true,
    minItems: 2,
  },
  "multipleOf": { type: "integer", multipleOf: 3 },
  "multipleOf with bounds": {
    type: "integer",
    multipleOf: 7,
    minimum: -100,
    exclusiveMaximum: 100,
  },
  "two multipleOf": {
    allOf: [{ type: "integer", multipleOf: 4 }, { multipleOf: 6 }],
    maximum: 1000,
    minimum: -1000,
  },
  "dependentSchemas": {
    type: "object",
    properties: { card: { type: "string", maxLength: 4 }, addr: { type: "string", maxLength: 4 } },
    dependentSchemas: { card: { required: ["addr"] } },
  },
  "unevaluatedProperties": {
    allOf: [{ properties: { a: { type: "integer" } } }],
    properties: { b: { type: "boolean" } },
    required: ["a", "c"],
    unevaluatedProperties: { type: "null" },
    type: "object",
  },
  "unevaluatedItems": {
    type: "array",
    prefixItems: [{ type: "integer" }],
    minItems: 3,
    unevaluatedItems: { type: "null" },
  },
  "$ref to an anchor": {
    $defs: { p: { $anchor: "pos", type: "integer", minimum: 1 } },
    type: "array",
    items: { $ref: "#pos" },
  },
  "$ref by $id": {
    $id: "https://kiln.test/root.json",
    $defs: { w: { $id: "word.json", type: "string", maxLength: 5 } },
    type: "object",
    properties: { w: { $ref: "word.json" } },
    required: ["w"],
  },
  "keywords beside anyOf": {
    type: "object",
    properties: { n: { type: "integer" } },
    required: ["n"],
    anyOf: [{ properties: { n: { minimum: 10 } } }, { properties: { n: { maximum: -10 } } }],
  },
  "keywords beside oneOf": {
    type: "object",
    required: ["t"],
    properties: { t: { type: "string" } },
    oneOf: [
      { properties: { t: { const: "a" }, x: { type: "integer" } }, required: ["x"] },
      { properties: { t: { const: "b" }, y: { type: "boolean" } }, required: ["y"] },
    ],
  },
  "required not in properties": {
    type: "object",
    properties: { a: { type: "integer" } },
    required: ["a", "b"],
  },
  "type-specific keywords without type": {
    minimum: 3,
    maxLength: 2,
    maxItems: 1,
    maxProperties: 1,
  },
  "properties x false": { type: "object", properties: { x: false, y: { type: "boolean" } } },
  "top-level true": true,
  "number in (0,1) exclusive": { type: "number", exclusiveMinimum: 0, exclusiveMaximum: 1 },
  "integer 100..120": { type: "integer", minimum: 100, maximum: 120 },
  "huge integers": { type: "integer", minimum: 9007199254740990, maximum: 1e20 },
  "negative numbers": { type: "number", minimum: -12.75, exclusiveMaximum: -0.5 },
  "not integer": { type: "number", not: { type: "integer" }, minimum: -2, maximum: 2 },
  "enum of values": { enum: [{ a: [1, { b: null }] }, [], 'x"y', -0.5, 1e21, true] },
  "recursive tree": {
    $defs: {
      t: {
        type: "object",
        properties: {
          v: { type: "integer" },
          kids: { type: "array", items: { $ref: "#/$defs/t" }, maxItems: 2 },
        },
        required: ["v"],
      },
    },
    $ref: "#/$defs/t",
  },
  "tool calls": {
    type: "array",
    minItems: 1,
    items: {
      anyOf: [
        {
          type: "object",
          properties: {
            name: { enum: ["get_weather"] },
            arguments: {
              type: "object",
              properties: {
                city: { type: "string", maxLength: 8 },
                days: { type: "integer", minimum: 1, maximum: 7 },
              },
              required: ["city"],
              additionalProperties: false,
            },
          },
          required: ["name", "arguments"],
          additionalProperties: false,
        },
        {
          type: "object",
          properties: {
            name: { enum: ["search"] },
            arguments: {
              type: "object",
              properties: { q: { type: "string", maxLength: 10 } },
              required: ["q"],
              additionalProperties: false,
            },
          },
          required: ["name", "arguments"],
          additionalProperties: false,
        },
      ],
    },
  },
  "nullable": {
    type: "object",
    properties: { n: { type: "integer", nullable: true } },
    required: ["n"],
  },
  "additionalProperties schema": {
    type: "object",
    properties: { a: { type: "null" } },
    additionalProperties: { type: "integer", maximum: 3 },
    maxProperties: 3,
    minProperties: 1,
  },
  "propertyNames enum": {
    type: "object",
    propertyNames: { enum: ["x", "y"] },
    additionalProperties: { type: "boolean" },
  },
  "dependentRequired": {
    type: "object",
    properties: { a: { type: "null" }, b: { type: "null" }, c: { type: "null" } },
    dependentRequired: { a: ["b"], b: ["c"] },
  },
  "oneOf by negation": {
    oneOf: [{ type: "integer", minimum: 0, maximum: 20 }, {
      type: "integer",
      minimum: 10,
      maximum: 30,
    }],
  },
  "if on numbers": {
    type: "integer",
    if: { maximum: 0 },
    then: { minimum: -5 },
    else: { maximum: 5 },
  },
  "any object": { type: "object" },
  "any array": { type: "array", maxItems: 3 },
};
