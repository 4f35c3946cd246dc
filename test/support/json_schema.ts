/** JSON Schema validation for tests, by ajv (a validator independent of XGrammar). */
import { Ajv } from "ajv";

/** Throws, naming the errors, unless `value` satisfies `schema`. */
export function assertValid(schema: object, value: unknown, what = "value"): void {
  const ajv = new Ajv({ strict: false });
  if (!ajv.validate(schema, value)) {
    throw new Error(`${what} ${JSON.stringify(value)}: ${ajv.errorsText(ajv.errors)}`);
  }
}

/** A schema with a nested object, an enum, array and string bounds and number ranges, closed. */
export const SCHEMA = {
  type: "object",
  properties: {
    name: { type: "string", minLength: 1, maxLength: 8 },
    mood: { enum: ["calm", "wild", "lucky"] },
    score: { type: "integer", minimum: 1, maximum: 9 },
    tags: {
      type: "array",
      items: { type: "string", maxLength: 4 },
      minItems: 1,
      maxItems: 2,
    },
    pos: {
      type: "object",
      properties: { x: { type: "integer", minimum: -5, maximum: 5 }, ok: { type: "boolean" } },
      required: ["x", "ok"],
      additionalProperties: false,
    },
  },
  required: ["name", "mood", "score", "tags", "pos"],
  additionalProperties: false,
};
