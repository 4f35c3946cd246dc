/**
 * For tests: the cases of the validation, format, content, meta-data and older keywords (see
 * `test_cases.ts`).
 */

/** One case. */
export interface KeywordCase {
  schema: unknown;
  accept?: string[];
  reject?: string[];
  refuse?: { keyword: string; pointer: string };
  /** An older draft's form: validated by ajv's validator of that draft (draft 4: none). */
  draft?: "2019" | "07" | "04";
}

/** The cases, by keyword. */
export const VALIDATION_CASES: Record<string, KeywordCase[]> = {
  type: [
    {
      schema: { type: ["integer", "null"] },
      accept: ["1", "null", "-7"],
      reject: ["1.5", '"1"', "true"],
    },
    {
      schema: { type: "number" },
      accept: ["1", "-0.5", "1e5", "2.5E-3"],
      reject: ["01", ".5", "1."],
    },
    { schema: { type: "strin" }, refuse: { keyword: "type", pointer: "/type" } },
  ],
  const: [
    {
      schema: { const: { b: [1, null], a: "x" } },
      accept: ['{"b": [1, null], "a": "x"}'],
      reject: ['{"a": "x", "b": [1, null]}', "null"],
    },
    { schema: { type: "string", const: 3 }, refuse: { keyword: "schema", pointer: "" } },
  ],
  enum: [
    {
      schema: { enum: [1, "a", null, [true], { k: 1.5 }] },
      accept: ["1", '"a"', "null", "[true]", '{"k": 1.5}'],
      reject: ["2", '"b"'],
    },
    {
      schema: { type: "integer", enum: [1, "a", 2.5, 3], minimum: 2 },
      accept: ["3"],
      reject: ["1", '"a"', "2.5"],
    },
    {
      schema: { enum: Array.from({ length: 10_001 }, (_, i) => i) },
      refuse: { keyword: "enum", pointer: "/enum" },
    },
  ],
  multipleOf: [
    {
      schema: { type: "integer", multipleOf: 3 },
      accept: ["0", "3", "-9", "9007199254740990"],
      reject: ["1640", "1", "9007199254740993"],
    },
    {
      schema: { type: "number", multipleOf: 0.5, minimum: 0, maximum: 2 },
      accept: ["0", "1", "2"],
      reject: ["3"],
    },
    {
      schema: { type: "number", multipleOf: 0.1 },
      refuse: { keyword: "multipleOf", pointer: "/multipleOf" },
    },
    {
      schema: { type: "integer", multipleOf: 1e6 + 3 },
      refuse: { keyword: "multipleOf", pointer: "/multipleOf" },
    },
  ],
  minimum: [
    { schema: { minimum: 3 }, accept: ["3", "3.5", '"s"', "null", "[]"], reject: ["2", "2.99"] },
    {
      schema: { type: "number", minimum: 0.05, maximum: 1 },
      accept: ["0.05", "0.5", "0.051", "1"],
      reject: ["0", "0.0", "0.04", "0.049", "1.0001"],
    },
  ],
  maximum: [{
    schema: { type: "number", maximum: 1 },
    accept: ["1", "0.5", "-3"],
    reject: ["1.5", "2"],
  }],
  exclusiveMinimum: [
    {
      schema: { type: "number", exclusiveMinimum: 0, exclusiveMaximum: 1 },
      accept: ["0.5", "0.001"],
      reject: ["0", "1", "1.5"],
    },
  ],
  exclusiveMaximum: [
    {
      schema: { type: "integer", exclusiveMaximum: 10, minimum: 8 },
      accept: ["8", "9"],
      reject: ["10"],
    },
    {
      schema: { type: "integer", maximum: 10, exclusiveMaximum: true },
      accept: ["9"],
      reject: ["10"],
      draft: "04",
    },
  ],
  minLength: [{ schema: { type: "string", minLength: 2 }, accept: ['"ab"'], reject: ['"a"'] }],
  maxLength: [{
    schema: { type: "string", maxLength: 1 },
    accept: ['""', '"a"'],
    reject: ['"ab"'],
  }],
  pattern: [{
    schema: { type: "string", pattern: "(" },
    refuse: { keyword: "pattern", pointer: "" },
  }],
  minItems: [{
    schema: { type: "array", items: { type: "null" }, minItems: 2 },
    accept: ["[null, null]"],
    reject: ["[null]"],
  }],
  maxItems: [{
    schema: { type: "array", items: { type: "null" }, maxItems: 1 },
    accept: ["[]", "[null]"],
    reject: ["[null, null]"],
  }],
  uniqueItems: [
    {
      schema: { type: "array", items: { enum: [1, 2, 3] }, uniqueItems: true },
      accept: ["[]", "[1, 3]", "[1, 2, 3]"],
      reject: ["[1, 1]", "[1, 2, 3, 1]"],
    },
    {
      schema: { type: "array", items: { type: "integer" }, uniqueItems: true, maxItems: 1 },
      accept: ["[5]"],
      reject: ["[5, 6]"],
    },
    {
      schema: { type: "array", items: { type: "integer" }, uniqueItems: true },
      refuse: { keyword: "uniqueItems", pointer: "/uniqueItems" },
    },
  ],
  minContains: [
    {
      schema: { type: "array", items: { type: "integer" }, contains: { const: 1 }, minContains: 2 },
      accept: ["[1, 1]", "[1, 1, 5]"],
      reject: ["[1]", "[1, 5]"],
    },
  ],
  maxContains: [
    {
      schema: { type: "array", items: { type: "integer" }, contains: { const: 1 }, maxContains: 1 },
      accept: ["[1]", "[1, 2]"],
      reject: ["[1, 1]", "[2]"],
    },
    {
      schema: { type: "array", contains: { type: "string", pattern: "a" }, maxContains: 1 },
      refuse: { keyword: "not", pointer: "/contains" },
    },
  ],
  maxProperties: [
    {
      schema: { type: "object", additionalProperties: { type: "null" }, maxProperties: 1 },
      accept: ["{}", '{"a": null}'],
      reject: ['{"a": null, "b": null}'],
    },
  ],
  minProperties: [
    {
      schema: {
        type: "object",
        properties: { a: { type: "null" }, b: { type: "null" } },
        minProperties: 1,
      },
      accept: ['{"a": null}', '{"b": null}'],
      reject: ["{}"],
    },
  ],
  required: [
    {
      schema: { type: "object", required: ["a"] },
      accept: ['{"a": 1}', '{"a": {"b": []}}'],
      reject: ["{}"],
    },
    {
      schema: {
        type: "object",
        properties: { a: { type: "null" } },
        required: ["b"],
        additionalProperties: { type: "boolean" },
      },
      accept: ['{"b": true}', '{"a": null, "b": false}'],
      reject: ['{"b": null}'],
    },
  ],
  dependentRequired: [
    {
      schema: {
        type: "object",
        properties: { a: { type: "null" }, b: { type: "null" } },
        dependentRequired: { a: ["b"] },
      },
      accept: ["{}", '{"a": null, "b": null}'],
      reject: ['{"a": null}'],
    },
  ],
  format: [{
    schema: { enum: ["2020-01-01"], format: "date" },
    refuse: { keyword: "format", pointer: "/format" },
  }],
  contentEncoding: [{
    schema: { type: "string", contentEncoding: "base64", maxLength: 0 },
    accept: ['""'],
  }],
  contentMediaType: [{
    schema: { type: "string", contentMediaType: "application/json", maxLength: 0 },
    accept: ['""'],
  }],
  contentSchema: [{
    schema: { type: "string", contentSchema: { type: "integer" }, maxLength: 0 },
    accept: ['""'],
  }],
  title: [{ schema: { title: "t", type: "null" }, accept: ["null"] }],
  description: [{ schema: { description: "d", type: "null" }, accept: ["null"] }],
  default: [{ schema: { default: 5, type: "null" }, accept: ["null"], reject: ["5"] }],
  examples: [{ schema: { examples: [5], type: "null" }, accept: ["null"], reject: ["5"] }],
  deprecated: [{ schema: { deprecated: true, type: "null" }, accept: ["null"] }],
  readOnly: [{ schema: { readOnly: true, type: "null" }, accept: ["null"] }],
  writeOnly: [{ schema: { writeOnly: true, type: "null" }, accept: ["null"] }],
  definitions: [{
    schema: { definitions: { n: { type: "null" } }, $ref: "#/definitions/n" },
    accept: ["null"],
    reject: ["1"],
  }],
  dependencies: [
    {
      schema: {
        type: "object",
        properties: { a: { type: "null" }, b: { type: "null" } },
        dependencies: { a: ["b"] },
      },
      accept: ['{"b": null}'],
      reject: ['{"a": null}'],
    },
    {
      schema: {
        type: "object",
        properties: { a: { type: "null" }, b: { type: "null" } },
        dependencies: { a: { required: ["b"] } },
      },
      accept: ['{"a": null, "b": null}'],
      reject: ['{"a": null}'],
    },
  ],
  additionalItems: [{
    schema: { type: "array", items: { type: "null" }, additionalItems: false },
    accept: ["[null, null]"],
  }],
  $recursiveRef: [
    {
      schema: { type: "array", items: { $recursiveRef: "#" }, maxItems: 1 },
      accept: ["[]", "[[]]"],
      reject: ["[1]"],
      draft: "2019",
    },
    {
      schema: { type: "array", items: { $recursiveRef: "other" } },
      refuse: { keyword: "$recursiveRef", pointer: "/items/$recursiveRef" },
    },
  ],
  $recursiveAnchor: [
    {
      schema: { $recursiveAnchor: true, type: "array", items: { $recursiveRef: "#" }, maxItems: 1 },
      accept: ["[[]]"],
      draft: "2019",
    },
  ],
  id: [
    {
      schema: {
        id: "https://x.test/root.json",
        $ref: "https://x.test/root.json#/definitions/n",
        definitions: { n: { type: "null" } },
      },
      accept: ["null"],
      reject: ["1"],
      draft: "04",
    },
    { schema: { id: "https://x.test/", type: "null" }, accept: ["null"], draft: "04" },
    {
      schema: {
        type: "object",
        properties: { a: { id: "a.json", $ref: "#/definitions/x" } },
        definitions: { x: { type: "null" } },
      },
      refuse: { keyword: "id", pointer: "/properties/a/id" },
    },
  ],
  nullable: [
    {
      schema: { type: "string", nullable: true, maxLength: 0 },
      accept: ["null", '""'],
      reject: ["1"],
    },
    { schema: { type: "integer", nullable: false }, accept: ["1"], reject: ["null"] },
  ],
  example: [{ schema: { example: 5, type: "null" }, accept: ["null"], reject: ["5"] }],
  discriminator: [{
    schema: { discriminator: { propertyName: "t" }, type: "null" },
    accept: ["null"],
  }],
  xml: [{ schema: { xml: { name: "x" }, type: "null" }, accept: ["null"] }],
  externalDocs: [{
    schema: { externalDocs: { url: "https://x.test" }, type: "null" },
    accept: ["null"],
  }],
  "any other keyword": [
    {
      schema: { "x-kiln": { minimum: 3 }, propertise: {}, type: "integer", maximum: 2 },
      accept: ["2", "-1"],
      reject: ["3"],
    },
  ],
};
