/** JSON Schema validation for tests, by ajv (a validator independent of XGrammar). */
import { Ajv, type ValidateFunction } from "ajv";

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

/** One schema of `bench/engine/guided_schemas.json`: what it exercises, a prompt, the schema. */
export interface GuidedSchema {
  about: string;
  prompt: string;
  schema: object;
}
export type GuidedSchemas = Record<string, GuidedSchema>;

/** A completion's text judged against its schema. */
export interface Verdict {
  text: string;
  parsed: boolean;
  valid: boolean;
  /** Why it is not valid (the parse error or ajv's errors); "" when valid. */
  why: string;
  /** ajv's errors as `path keyword` (`/ratio maximum`), or `parse` when it did not parse. */
  errors: string[];
}

const ajv = new Ajv({ strict: false });
const compiled = new WeakMap<object, ValidateFunction>();

/** Parse `text` as JSON and validate it against `schema` with ajv. */
export function checkCompletion(schema: object, text: string): Verdict {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { text, parsed: false, valid: false, why: (e as Error).message, errors: ["parse"] };
  }
  let validate = compiled.get(schema);
  if (validate === undefined) compiled.set(schema, validate = ajv.compile(schema));
  const valid = validate(value) === true;
  const errors = (validate.errors ?? []).map((e) => `${e.instancePath} ${e.keyword}`);
  return { text, parsed: true, valid, why: valid ? "" : ajv.errorsText(validate.errors), errors };
}
