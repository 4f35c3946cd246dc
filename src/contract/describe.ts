/**
 * One safe way to show an untrusted value in an error message. It never throws and never calls
 * the value's own methods (`toString`, `valueOf`, getters of a JSON-parsed object are plain
 * data, but a Proxy's traps are caught), and its work is bounded by `maxLength` however deep or
 * large the value is: an array nested 10,000 deep or `{"toString":1}` read as themselves.
 */

const DEPTH = 3;
const ITEMS = 8;

/**
 * A short JSON-like rendering of `value`, at most about `maxLength` characters (an ellipsis
 * marks a cut). Strings are quoted; arrays and objects show their first items, 3 levels deep.
 */
export function describe(value: unknown, maxLength = 80): string {
  let text: string;
  try {
    text = show(value, DEPTH, Math.max(8, maxLength));
  } catch {
    text = `a ${typeof value}`;
  }
  return text.length > maxLength ? `${text.slice(0, Math.max(1, maxLength - 1))}…` : text;
}

function show(value: unknown, depth: number, budget: number): string {
  switch (typeof value) {
    case "string": {
      const cut = value.length > budget;
      return JSON.stringify(cut ? value.slice(0, budget) : value) + (cut ? "…" : "");
    }
    case "number":
    case "boolean":
    case "undefined":
      return String(value);
    case "bigint":
      return `${value}n`;
    case "symbol":
      return value.description === undefined
        ? "Symbol()"
        : `Symbol(${show(value.description, 0, budget)})`;
    case "function":
      return "a function";
  }
  if (value === null) return "null";
  if (Array.isArray(value)) return showArray(value, depth, budget);
  return showObject(value as object, depth, budget);
}

function showArray(value: readonly unknown[], depth: number, budget: number): string {
  if (value.length === 0) return "[]";
  if (depth <= 0) return `[…${value.length}]`;
  const parts: string[] = [];
  let used = 2;
  for (let i = 0; i < value.length && i < ITEMS && used < budget; i++) {
    const s = show(value[i], depth - 1, budget - used);
    parts.push(s);
    used += s.length + 2;
  }
  const more = value.length - parts.length;
  return `[${parts.join(", ")}${more > 0 ? `, …${more} more` : ""}]`;
}

function showObject(value: object, depth: number, budget: number): string {
  const proto = Object.getPrototypeOf(value);
  const kind = proto === Object.prototype || proto === null
    ? ""
    : typeof proto?.constructor?.name === "string"
    ? `${proto.constructor.name} `
    : "";
  const keys = Object.keys(value);
  if (keys.length === 0) return `${kind}{}`;
  if (depth <= 0) return `${kind}{…}`;
  const parts: string[] = [];
  let used = 2;
  for (let i = 0; i < keys.length && i < ITEMS && used < budget; i++) {
    const k = keys[i]!;
    const v = (value as Record<string, unknown>)[k];
    const s = `${show(k, 0, 40)}: ${show(v, depth - 1, budget - used)}`;
    parts.push(s);
    used += s.length + 2;
  }
  const more = keys.length - parts.length;
  return `${kind}{${parts.join(", ")}${more > 0 ? `, …${more} more` : ""}}`;
}
