/**
 * Text scanning shared by the tool-call conventions: markers that may arrive split across stream
 * pieces, the end of a JSON object or array whose text is still growing, and the check that a
 * parsed value is a function call.
 */

/** A function call parsed from a model's output. */
export interface ParsedToolCall {
  /** The function's name. */
  name: string;
  /** Its arguments: the JSON text of an object. */
  arguments: string;
}

/**
 * Where a call starts in the text scanned: at `at`, with `skip` characters of opener (a marker)
 * before the call's own text; `hold`: the text from `hold` on may be the start of an opener
 * (a marker cut by the stream), so it waits for more.
 */
export type Opening = { at: number; skip: number } | { hold: number } | undefined;

/**
 * What a convention read after an opener: `more` (the call's text is not complete yet), the
 * `calls` it holds and the characters they `used`, or `bad` (not a call: the opener and `used`
 * characters are content).
 */
export type Scan =
  | { more: true }
  | { calls: ParsedToolCall[]; used: number }
  | { bad: true; used: number };

/** Where `marker` is in `text`, or where a prefix of it ends the text (held back). */
export function findMarker(text: string, marker: string): Opening {
  const at = text.indexOf(marker);
  if (at >= 0) return { at, skip: marker.length };
  for (let k = Math.min(marker.length - 1, text.length); k > 0; k--) {
    if (text.endsWith(marker.slice(0, k))) return { hold: text.length - k };
  }
  return undefined;
}

/** The index of the first character that is not whitespace at or after `from`, or -1. */
export function firstNonSpace(text: string, from = 0): number {
  for (let i = from; i < text.length; i++) {
    if (!/\s/.test(text[i]!)) return i;
  }
  return -1;
}

/**
 * The index just past the JSON object or array opening at `start` (brackets counted outside
 * strings; whether the text is valid JSON is `JSON.parse`'s to say), or -1 while it is open.
 */
export function jsonEnd(text: string, start: number): number {
  let depth = 0, inString = false, escaped = false;
  for (let k = start; k < text.length; k++) {
    const c = text[k];
    if (inString) {
      if (escaped) escaped = false;
      else if (c === "\\") escaped = true;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      if (--depth === 0) return k + 1;
    }
  }
  return -1;
}

const NOT_JSON = Symbol("not JSON");

/** `JSON.parse`, or `NOT_JSON` for text that is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A call from `{"name": ..., "arguments": {...}}` (or `"parameters"`, the bare-JSON convention's key; arguments given
 * as the JSON text of an object are accepted too), else undefined.
 */
export function callOf(value: unknown): ParsedToolCall | undefined {
  if (!isObject(value) || typeof value.name !== "string" || value.name === "") return undefined;
  let args = value.arguments ?? value.parameters;
  if (typeof args === "string") args = parseJson(args);
  if (!isObject(args)) return undefined;
  return { name: value.name, arguments: JSON.stringify(args) };
}

/** Calls from a parsed object or array of objects; undefined unless every entry is a call. */
export function callsOf(value: unknown): ParsedToolCall[] | undefined {
  const list = Array.isArray(value) ? value : [value];
  const calls = list.map(callOf);
  return calls.length > 0 && calls.every((c) => c !== undefined)
    ? calls as ParsedToolCall[]
    : undefined;
}

/**
 * Scan one JSON value (object or array) opening the text after an opener (whitespace first is
 * allowed): its calls, `bad` when it is not calls (or `opens` says the first character cannot
 * open one), `more` while it is still open.
 */
export function scanJsonCalls(
  text: string,
  final: boolean,
  opens: (c: string) => boolean,
): Scan {
  const i = firstNonSpace(text);
  if (i < 0) return final ? { bad: true, used: text.length } : { more: true };
  if (!opens(text[i]!)) return { bad: true, used: 0 };
  const end = jsonEnd(text, i);
  if (end < 0) return final ? { bad: true, used: text.length } : { more: true };
  const calls = callsOf(parseJson(text.slice(i, end)));
  return calls ? { calls, used: end } : { bad: true, used: end };
}

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** `length` random letters and digits. */
export function randomAlnum(length: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  return Array.from(bytes, (b) => ALNUM[b % ALNUM.length]).join("");
}
