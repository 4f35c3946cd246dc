/** Small typed readers for untrusted JSON objects; every failure names the field. */
import { describe } from "./describe.ts";
import { EngineError } from "./errors.ts";
import type { UnknownFields } from "./types.ts";

export type Json = Record<string, unknown>;

export function bad(path: string, expected: string, got: unknown): EngineError {
  return EngineError.invalidArgument(`${path}: expected ${expected}, got ${describe(got)}`);
}

/**
 * `json` parsed when it is text, else `json` itself (already parsed); text that is not JSON is an
 * `InvalidArgument` naming `path`.
 */
export function jsonValue(json: string | unknown, path: string): unknown {
  if (typeof json !== "string") return json;
  try {
    return JSON.parse(json);
  } catch (e) {
    throw EngineError.invalidArgument(`${path}: not valid JSON (${(e as Error).message})`, e);
  }
}

export function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function object(value: unknown, path: string): Json {
  if (!isObject(value)) throw bad(path, "an object", value);
  return value;
}

/** Absent and `null` both read as undefined, as serde reads a missing `Option`. */
function present(obj: Json, key: string): unknown {
  const v = obj[key];
  return v === null ? undefined : v;
}

export function optNumber(obj: Json, key: string, path: string): number | undefined {
  const v = present(obj, key);
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v)) throw bad(`${path}.${key}`, "a number", v);
  return v;
}

export function isTokenId(v: unknown): v is number {
  return typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 0xffff_ffff;
}

export function optUint(obj: Json, key: string, path: string): number | undefined {
  const v = present(obj, key);
  if (v === undefined) return undefined;
  if (!isTokenId(v)) throw bad(`${path}.${key}`, "a non-negative integer", v);
  return v;
}

export function optInt(obj: Json, key: string, path: string): number | undefined {
  const v = present(obj, key);
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isSafeInteger(v)) {
    throw bad(`${path}.${key}`, "an integer", v);
  }
  return v;
}

export function optBool(obj: Json, key: string, path: string): boolean | undefined {
  const v = present(obj, key);
  if (v === undefined) return undefined;
  if (typeof v !== "boolean") throw bad(`${path}.${key}`, "a boolean", v);
  return v;
}

export function optString(obj: Json, key: string, path: string): string | undefined {
  const v = present(obj, key);
  if (v === undefined) return undefined;
  if (typeof v !== "string") throw bad(`${path}.${key}`, "a string", v);
  return v;
}

export function optObject(obj: Json, key: string, path: string): Json | undefined {
  const v = present(obj, key);
  return v === undefined ? undefined : object(v, `${path}.${key}`);
}

export function tokenIds(value: unknown, path: string): number[] {
  if (!Array.isArray(value)) throw bad(path, "an array of token ids", value);
  value.forEach((v, i) => {
    if (!isTokenId(v)) throw bad(`${path}[${i}]`, "a non-negative integer token id", v);
  });
  return value as number[];
}

export function optTokenIds(obj: Json, key: string, path: string): number[] | undefined {
  const v = present(obj, key);
  return v === undefined ? undefined : tokenIds(v, `${path}.${key}`);
}

export function optStrings(obj: Json, key: string, path: string): string[] | undefined {
  const v = present(obj, key);
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) throw bad(`${path}.${key}`, "an array of strings", v);
  v.forEach((s, i) => {
    if (typeof s !== "string") throw bad(`${path}.${key}[${i}]`, "a string", s);
  });
  return v as string[];
}

/** The keys of `obj` not in `known`, or undefined when there are none. */
export function unknownFields(obj: Json, known: readonly string[]): UnknownFields | undefined {
  let out: UnknownFields | undefined;
  for (const [k, v] of Object.entries(obj)) {
    if (known.includes(k)) continue;
    (out ??= {})[k] = v;
  }
  return out;
}

/** Copy the defined entries of `src` into a fresh object, unknown fields first. */
export function compact(src: Record<string, unknown>): Json {
  const { unknown_fields, ...rest } = src;
  const out: Json = isObject(unknown_fields) ? { ...unknown_fields } : {};
  for (const [k, v] of Object.entries(rest)) if (v !== undefined) out[k] = v;
  return out;
}

/** Assign only defined values, so optional properties stay absent (exactOptionalPropertyTypes). */
export function defined<T extends object>(
  target: T,
  values: { [K in keyof T]?: T[K] | undefined },
): T {
  for (const [k, v] of Object.entries(values)) {
    if (v !== undefined) (target as Record<string, unknown>)[k] = v;
  }
  return target;
}
