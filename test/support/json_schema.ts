/** JSON Schema validation for tests, by ajv (a validator independent of XGrammar). */
import { Ajv } from "ajv";

/** Throws, naming the errors, unless `value` satisfies `schema`. */
export function assertValid(schema: object, value: unknown, what = "value"): void {
  const ajv = new Ajv({ strict: false });
  if (!ajv.validate(schema, value)) {
    throw new Error(`${what} ${JSON.stringify(value)}: ${ajv.errorsText(ajv.errors)}`);
  }
}
