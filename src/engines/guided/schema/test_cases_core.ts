/**
 * For tests: the cases of the core keywords (`$schema`, `$id`, `$ref`, anchors, `$vocabulary`,
 * `$comment`, `$defs`; see `test_cases.ts`).
 */
import type { KeywordCase } from "./test_cases_validation.ts";

const tree = {
  $defs: {
    node: {
      type: "object",
      properties: { v: { type: "integer" }, next: { $ref: "#/$defs/node" } },
      required: ["v"],
      additionalProperties: false,
    },
  },
  $ref: "#/$defs/node",
};

/** The cases, by keyword. */
/** The core keywords' cases, keyed by keyword. */
export const CORE_CASES: Record<string, KeywordCase[]> = {
  $schema: [{
    schema: { $schema: "https://json-schema.org/draft/2020-12/schema", type: "null" },
    accept: ["null"],
    reject: ["1"],
  }],
  $id: [
    {
      schema: {
        $id: "https://x.test/a.json",
        $defs: { b: { $id: "b.json", type: "boolean" } },
        $ref: "b.json",
      },
      accept: ["true"],
      reject: ["null"],
    },
    {
      schema: { $id: "https://x.test/a.json#frag", type: "null" },
      refuse: { keyword: "$id", pointer: "/$id" },
    },
  ],
  $ref: [
    {
      schema: tree,
      accept: ['{"v": 1}', '{"v": 1, "next": {"v": -2}}'],
      reject: ['{"next": {"v": 1}}', '{"v": 1, "x": 2}'],
    },
    {
      schema: { $ref: "#/$defs/x", minimum: 5, $defs: { x: { type: "integer", maximum: 7 } } },
      accept: ["5", "7"],
      reject: ["4", "8"],
    },
    {
      schema: { $ref: "https://elsewhere.test/s.json" },
      refuse: { keyword: "$ref", pointer: "/$ref" },
    },
    { schema: { $ref: "#/$defs/missing" }, refuse: { keyword: "$ref", pointer: "/$ref" } },
    {
      schema: { $defs: { a: { $ref: "#/$defs/b" }, b: { $ref: "#/$defs/a" } }, $ref: "#/$defs/a" },
      refuse: { keyword: "$ref", pointer: "/$defs/a" },
    },
    {
      schema: { type: "object", properties: { a: { $ref: "#" } }, required: ["a"] },
      refuse: { keyword: "schema", pointer: "" },
    },
  ],
  $anchor: [{
    schema: { $defs: { x: { $anchor: "here", const: 3 } }, $ref: "#here" },
    accept: ["3"],
    reject: ["4"],
  }],
  $dynamicRef: [
    {
      schema: { $dynamicAnchor: "t", type: "array", items: { $dynamicRef: "#t" }, maxItems: 1 },
      accept: ["[]", "[[]]", "[[[]]]"],
      reject: ["[1]"],
    },
    {
      schema: {
        $defs: {
          a: { $id: "a.json", $dynamicAnchor: "t", type: "integer" },
          b: { $id: "b.json", $dynamicAnchor: "t", type: "string" },
          c: { $id: "c.json", $dynamicRef: "a.json#t" },
        },
        $ref: "c.json",
      },
      refuse: { keyword: "$dynamicRef", pointer: "/$defs/c/$dynamicRef" },
    },
  ],
  $dynamicAnchor: [{
    schema: { $defs: { x: { $dynamicAnchor: "d", type: "null" } }, $ref: "#d" },
    accept: ["null"],
    reject: ["1"],
  }],
  $vocabulary: [{
    schema: { $vocabulary: { "https://x.test": true }, type: "null" },
    accept: ["null"],
  }],
  $comment: [{ schema: { $comment: "x", type: "boolean" }, accept: ["true"], reject: ["null"] }],
  $defs: [{
    schema: { $defs: { n: { type: "null" } }, $ref: "#/$defs/n" },
    accept: ["null"],
    reject: ["0"],
  }],
};
