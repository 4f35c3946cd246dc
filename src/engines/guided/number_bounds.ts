/**
 * Number bounds that XGrammar enforces exactly. XGrammar (web-xgrammar 0.1.27) bounds a JSON
 * Schema `number` by its integer part only: under `maximum: 1` it lets `1.5` through (measured:
 * 340 of 400 sampled completions broke such bounds, `bench/results/guided-validity-lavapipe.json`
 * before this rewrite). So before compiling, every `number` subschema with bounds is rewritten to
 * what XGrammar does bound exactly: the integers in range, and decimals whose integer part keeps
 * the whole value in range:
 *
 * - `ip.frac` with `ip ≥ 0` lies in `[ip, ip + 1)`: allowed for `ip` in `[⌈lo⌉, ⌊hi⌋ - 1]`;
 * - `-ip.frac` lies in `(-ip - 1, -ip]`: allowed for `-ip` in `[⌈lo⌉ + 1, ⌊hi⌋]`.
 *
 * The result accepts a subset of the schema's numbers (never one outside it): values within one
 * unit of a non-integer bound, and those strictly between -1 and 0, cannot be written. A bounded
 * number that leaves nothing writable is refused. A `number` among several types, or with
 * `multipleOf`, `enum` or `const`, is passed on as it is.
 */
import { EngineError } from "../../contract/errors.ts";

type Schema = Record<string, unknown>;

const isObject = (v: unknown): v is Schema =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Keywords whose value is a subschema, a list of them, or a map of them. */
const ONE = ["items", "additionalProperties", "not", "if", "then", "else", "contains"];
const MANY = ["anyOf", "oneOf", "allOf", "prefixItems"];
const MAP = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];

/** `schema` with every bounded `number` rewritten (a new object; `schema` is left as it is). */
export function exactNumberBounds(schema: Schema, field: string, path = "#"): Schema {
  const out: Schema = { ...schema };
  for (const k of ONE) {
    if (isObject(out[k])) out[k] = exactNumberBounds(out[k] as Schema, field, `${path}/${k}`);
  }
  for (const k of MANY) {
    const list = out[k];
    if (Array.isArray(list)) {
      out[k] = list.map((s, i) =>
        isObject(s) ? exactNumberBounds(s, field, `${path}/${k}/${i}`) : s
      );
    }
  }
  for (const k of MAP) {
    const map = out[k];
    if (isObject(map)) {
      out[k] = Object.fromEntries(
        Object.entries(map).map((
          [name, s],
        ) => [name, isObject(s) ? exactNumberBounds(s, field, `${path}/${k}/${name}`) : s]),
      );
    }
  }
  return out.type === "number" ? boundedNumber(out, field, path) : out;
}

interface Bound {
  value: number;
  inclusive: boolean;
}

/** A schema's lower or upper bound (draft 4's boolean `exclusive*` and draft 6's numbers). */
function bound(s: Schema, side: "minimum" | "maximum"): Bound | undefined {
  const exclusive = side === "minimum" ? "exclusiveMinimum" : "exclusiveMaximum";
  const b: Bound[] = [];
  if (typeof s[side] === "number") b.push({ value: s[side], inclusive: s[exclusive] !== true });
  if (typeof s[exclusive] === "number") b.push({ value: s[exclusive], inclusive: false });
  if (b.length === 0) return undefined;
  // The tighter of the two.
  return b.reduce((x, y) =>
    x.value === y.value
      ? (x.inclusive ? y : x)
      : (side === "minimum" ? x.value > y.value : x.value < y.value)
      ? x
      : y
  );
}

function boundedNumber(s: Schema, field: string, path: string): Schema {
  const lo = bound(s, "minimum"), hi = bound(s, "maximum");
  const exact = s.multipleOf !== undefined || s.enum !== undefined || s.const !== undefined;
  if ((lo === undefined && hi === undefined) || exact) return s;
  const {
    minimum: _a,
    maximum: _b,
    exclusiveMinimum: _c,
    exclusiveMaximum: _d,
    type: _e,
    ...rest
  } = s;
  const lowInt = lo === undefined
    ? -Infinity
    : lo.inclusive
    ? Math.ceil(lo.value)
    : Math.floor(lo.value) + 1;
  const highInt = hi === undefined
    ? Infinity
    : hi.inclusive
    ? Math.floor(hi.value)
    : Math.ceil(hi.value) - 1;
  const ceilLo = lo === undefined ? -Infinity : Math.ceil(lo.value);
  const floorHi = hi === undefined ? Infinity : Math.floor(hi.value);
  const parts: Schema[] = [];
  const range = (type: string, min: number, max: number) => {
    if (min > max) return;
    parts.push({
      type,
      ...(Number.isFinite(min) ? { minimum: min } : {}),
      ...(Number.isFinite(max) ? { maximum: max } : {}),
    });
  };
  range("integer", lowInt, highInt);
  // Decimals with a non-negative integer part, then with a negative one.
  range("number", Math.max(0, ceilLo, lowInt), floorHi - 1);
  range("number", ceilLo + 1, Math.min(-1, highInt));
  if (parts.length === 0) {
    throw EngineError.invalidField(
      `${field} (${path})`,
      `no number between the bounds can be constrained exactly (XGrammar bounds a number's ` +
        `integer part only, so Kiln writes whole units within the bounds): widen them to contain ` +
        `an integer`,
    );
  }
  return parts.length === 1 ? { ...rest, ...parts[0] } : { ...rest, anyOf: parts };
}
