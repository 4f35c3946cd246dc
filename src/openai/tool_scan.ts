/**
 * Text scanning shared by the tool-call conventions: markers that may arrive split across stream
 * pieces, the end of a JSON object or array whose text is still growing, the calls of a list
 * read element by element, and the check that a parsed value is a function call.
 *
 * One rule for every convention ({@linkcode CallCheck}): a call is one only if its name is a
 * non-empty string among the request's functions and its arguments are a JSON object (or the JSON
 * text of one, as OpenAI's own messages write them). Arguments missing, `null`, an array, a
 * number, a string that is not an object's JSON text, or a name the request did not offer: not a
 * call, and its text stays content (as vLLM's parsers leave what they cannot read). The same call
 * written twice is two calls.
 */

/** A function call parsed from a model's output. */
export interface ParsedToolCall {
  /** The function's name. */
  name: string;
  /** Its arguments: the JSON text of an object. */
  arguments: string;
}

/** What makes a parsed value a call (see the file's header); injectable so tests can break it. */
export interface CallCheck {
  /** The names a call may have (the request's functions); undefined: any name. */
  readonly names?: { has(name: string): boolean };
  /** The JSON text of a call's arguments object from its arguments value, else undefined. */
  readonly args?: (value: unknown) => string | undefined;
}

/**
 * Where a call starts in the text scanned: at `at`, with `skip` characters of opener (a marker)
 * before the call's own text; `hold`: the text from `hold` on may be the start of an opener
 * (a marker cut by the stream), so it waits for more.
 */
export type Opening = { at: number; skip: number } | { hold: number } | undefined;

/**
 * How far the reply has come when it is scanned: `more` (more text may follow), `end` (the model
 * ended it: EOS, a stop token or string) or `cut` (`max_tokens` ended it mid-text).
 */
export type ReplyEnd = "more" | "end" | "cut";

/**
 * What a convention read after an opener: `more` (the call's text is not complete yet; `calls`:
 * the calls of a list complete so far, when the convention gives them out one by one), the
 * `calls` it holds and the characters they `used` (none when a cut reply dropped an incomplete
 * call), or `bad` (not a call: the opener and `used` characters are content; never after a
 * `more` that gave calls).
 */
export type Scan =
  | { more: true; calls?: ParsedToolCall[] }
  | { calls: ParsedToolCall[]; used: number }
  | { bad: true; used: number };

/**
 * The scan of a call whose text has not ended: wait for `more`; at a cut, dropped (with the
 * `kept` calls of a list complete before it); at the model's end, `bad` (content).
 */
export const unfinished = (
  end: ReplyEnd,
  used: number,
  kept: ParsedToolCall[] = [],
  badUsed = used,
): Scan =>
  end === "more"
    ? { more: true }
    : end === "cut"
    ? { calls: kept, used }
    : { bad: true, used: badUsed };

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

/** The index just past the JSON string opening at `start` (`"`), or -1 while it is open. */
export function jsonStringEnd(text: string, start: number): number {
  let escaped = false;
  for (let k = start + 1; k < text.length; k++) {
    const c = text[k];
    if (escaped) escaped = false;
    else if (c === "\\") escaped = true;
    else if (c === '"') return k + 1;
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

/** Arguments that are a JSON object, or the JSON text of one: that object's JSON text. */
export function objectArguments(value: unknown): string | undefined {
  const v = typeof value === "string" ? parseJson(value) : value;
  return isObject(v) ? JSON.stringify(v) : undefined;
}

/** Whether `name` may name a call under `check`: a non-empty string among its names. */
export const nameOk = (name: unknown, check: CallCheck): name is string =>
  typeof name === "string" && name !== "" && (check.names?.has(name) ?? true);

/** A call from `name` and its arguments value under `check`, else undefined. */
export function callFrom(
  name: unknown,
  args: unknown,
  check: CallCheck,
): ParsedToolCall | undefined {
  if (!nameOk(name, check)) return undefined;
  const text = (check.args ?? objectArguments)(args);
  return text === undefined ? undefined : { name, arguments: text };
}

/**
 * A call from `{"name": ..., "arguments": {...}}` (or `"parameters"`, the bare-JSON convention's
 * key) under `check`, else undefined.
 */
export function callOf(value: unknown, check: CallCheck = {}): ParsedToolCall | undefined {
  if (!isObject(value)) return undefined;
  return callFrom(value.name, value.arguments ?? value.parameters, check);
}

/** Calls from a parsed object or array of objects; undefined unless every entry is a call. */
export function callsOf(value: unknown, check: CallCheck = {}): ParsedToolCall[] | undefined {
  const list = Array.isArray(value) ? value : [value];
  const calls = list.map((v) => callOf(v, check));
  return calls.length > 0 && calls.every((c) => c !== undefined)
    ? calls as ParsedToolCall[]
    : undefined;
}

/** The calls of a list read so far, where reading stopped, and why. */
export interface ListRead {
  /** The elements read, each a call. */
  calls: ParsedToolCall[];
  /** `closed`: past its `]`; `open`: an element or separator still to come; `bad`: at text that is not a call or a separator. */
  state: "open" | "closed" | "bad";
  /** The index just past the list (`closed`), or where the unread or bad text starts. */
  at: number;
}

/**
 * Read the JSON list opening at `start` (`[`) element by element: each element a call object,
 * then `,` or `]`. Complete elements are read while the list is still growing.
 */
export function readList(text: string, start: number, check: CallCheck = {}): ListRead {
  const calls: ParsedToolCall[] = [];
  let at = start + 1;
  for (;;) {
    const i = firstNonSpace(text, at);
    if (i < 0) return { calls, state: "open", at };
    if (text[i] !== "{") return { calls, state: "bad", at: i };
    const end = jsonEnd(text, i);
    if (end < 0) return { calls, state: "open", at: i };
    const call = callOf(parseJson(text.slice(i, end)), check);
    if (call === undefined) return { calls, state: "bad", at: i };
    calls.push(call);
    const k = firstNonSpace(text, end);
    if (k < 0) return { calls, state: "open", at: end };
    if (text[k] === "]") return { calls, state: "closed", at: k + 1 };
    if (text[k] !== ",") return { calls, state: "bad", at: end };
    at = k + 1;
  }
}

/**
 * Scan one JSON value (object or array) opening the text after an opener (whitespace first is
 * allowed): its calls, `bad` when it is not calls (or `opens` says the first character cannot
 * open one), `more` while it is still open. Cut while open, a list keeps the calls complete
 * before the cut (see {@linkcode readList}); an object is dropped.
 */
export function scanJsonCalls(
  text: string,
  end: ReplyEnd,
  opens: (c: string) => boolean,
  check: CallCheck = {},
): Scan {
  const i = firstNonSpace(text);
  if (i < 0) return unfinished(end, text.length);
  if (!opens(text[i]!)) return { bad: true, used: 0 };
  const close = jsonEnd(text, i);
  if (close < 0) {
    return unfinished(end, text.length, text[i] === "[" ? readList(text, i, check).calls : []);
  }
  const calls = callsOf(parseJson(text.slice(i, close)), check);
  return calls ? { calls, used: close } : { bad: true, used: close };
}

/**
 * Scan a reply constrained to calls: one call object, or a list of them given out element by
 * element as each completes (`more` with the calls so far). What cannot be read as calls ends
 * the reading: before any call it is `bad`; after some, the calls read so far are the scan's and
 * the rest is left. An element the reply ended inside is dropped (a constrained reply is never
 * content).
 */
export function scanConstrained(text: string, end: ReplyEnd, check: CallCheck = {}): Scan {
  const i = firstNonSpace(text);
  if (i < 0) return end === "more" ? { more: true } : { calls: [], used: text.length };
  if (text[i] === "[") {
    const list = readList(text, i, check);
    if (list.state === "open") {
      return end === "more"
        ? { more: true, calls: list.calls }
        : { calls: list.calls, used: text.length };
    }
    if (list.calls.length === 0) return { bad: true, used: list.at };
    return { calls: list.calls, used: list.at };
  }
  if (text[i] !== "{") return { bad: true, used: 0 };
  const close = jsonEnd(text, i);
  if (close < 0) return end === "more" ? { more: true } : { calls: [], used: text.length };
  const call = callOf(parseJson(text.slice(i, close)), check);
  return call ? { calls: [call], used: close } : { bad: true, used: close };
}

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** `length` random letters and digits. */
export function randomAlnum(length: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  return Array.from(bytes, (b) => ALNUM[b % ALNUM.length]).join("");
}
