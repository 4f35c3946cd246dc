/**
 * A light check of a JSON value against the JSON Schema keywords the demo's schemas use: `type`,
 * `enum`, `const`, `minimum`/`maximum`, `minLength`/`maxLength`, `properties`, `required`,
 * `additionalProperties: false`, `items`, `minItems`/`maxItems`, `anyOf`. It reports what it
 * finds wrong, by path; keywords it does not know it leaves unchecked (the page carries no full
 * validator: the engine's grammar is what holds the output to the schema).
 */

type Schema = Record<string, unknown>;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function typeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

function hasType(v: unknown, type: unknown): boolean {
  const types = Array.isArray(type) ? type : [type];
  const t = typeOf(v);
  return types.some((want) => want === t || (want === "number" && t === "integer"));
}

const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);

/** What is wrong with `value` under `schema`, as `path: problem` lines (empty: nothing found). */
export function checkSchema(schema: unknown, value: unknown, path = "$"): string[] {
  if (!isObject(schema)) return [];
  const out: string[] = [];
  const bad = (why: string) => out.push(`${path}: ${why}`);
  if (schema.type !== undefined && !hasType(value, schema.type)) {
    bad(`expected ${JSON.stringify(schema.type)}, got ${typeOf(value)}`);
    return out;
  }
  if (Array.isArray(schema.anyOf)) {
    const fits = schema.anyOf.some((s) => checkSchema(s, value, path).length === 0);
    if (!fits) bad("matches none of anyOf");
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => same(e, value))) {
    bad(`${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  }
  if ("const" in schema && !same(schema.const, value)) {
    bad(`expected ${JSON.stringify(schema.const)}`);
  }
  if (typeof value === "number") {
    const [min, max] = [num(schema.minimum), num(schema.maximum)];
    if (min !== undefined && value < min) bad(`${value} is below the minimum ${min}`);
    if (max !== undefined && value > max) bad(`${value} is above the maximum ${max}`);
  }
  if (typeof value === "string") {
    const n = [...value].length;
    const [min, max] = [num(schema.minLength), num(schema.maxLength)];
    if (min !== undefined && n < min) bad(`${n} characters, fewer than ${min}`);
    if (max !== undefined && n > max) bad(`${n} characters, more than ${max}`);
  }
  if (Array.isArray(value)) {
    const [min, max] = [num(schema.minItems), num(schema.maxItems)];
    if (min !== undefined && value.length < min) bad(`${value.length} items, fewer than ${min}`);
    if (max !== undefined && value.length > max) bad(`${value.length} items, more than ${max}`);
    value.forEach((item, i) => out.push(...checkSchema(schema.items, item, `${path}[${i}]`)));
  }
  if (isObject(value)) out.push(...checkObject(schema, value, path));
  return out;
}

function checkObject(schema: Schema, value: Record<string, unknown>, path: string): string[] {
  const out: string[] = [];
  const props = isObject(schema.properties) ? schema.properties : {};
  for (const key of Array.isArray(schema.required) ? schema.required : []) {
    if (!(key in value)) out.push(`${path}: missing required ${JSON.stringify(key)}`);
  }
  for (const [key, v] of Object.entries(value)) {
    if (key in props) out.push(...checkSchema(props[key], v, `${path}.${key}`));
    else if (schema.additionalProperties === false) {
      out.push(`${path}: unexpected key ${JSON.stringify(key)}`);
    }
  }
  return out;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
