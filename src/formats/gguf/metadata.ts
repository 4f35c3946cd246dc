/**
 * Typed access to GGUF metadata. A GGUF file is untrusted: a value of the wrong type (a string
 * where a count belongs, a negative or fractional count, a per-layer array where one number is
 * expected) is refused with `InvalidArgument` naming the key.
 */
import { EngineError } from "../../contract/errors.ts";
import type { MetadataValue } from "./lib.ts";

/** Keys the parser reports beside the metadata that are not metadata entries. */
const HEADER_FIELDS = new Set(["version", "tensor_count", "kv_count"]);

function describe(v: unknown): string {
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (typeof v === "string") return `a string ${JSON.stringify(v.slice(0, 40))}`;
  if (typeof v === "bigint") return `the integer ${v}`;
  if (typeof v === "number") return `the number ${v}`;
  return `a ${typeof v}`;
}

/**
 * GGUF stores most floats as f32, narrowed from the checkpoint's decimal (1e-5 is stored as
 * 9.99999974e-6): give back the shortest decimal that narrows to the same f32, as in the config.
 */
export function shortestF32(v: number): number {
  if (Math.fround(v) !== v) return v;
  for (let p = 1; p <= 9; p++) {
    const d = Number(v.toPrecision(p));
    if (Math.fround(d) === v) return d;
  }
  return v;
}

export class GgufMetadata {
  readonly #kv = new Map<string, MetadataValue>();

  /** `raw`: the parser's metadata object (own properties only are read). */
  constructor(raw: Readonly<Record<string, unknown>>, readonly file = "gguf") {
    for (const key of Object.keys(raw)) {
      if (!HEADER_FIELDS.has(key)) this.#kv.set(key, raw[key] as MetadataValue);
    }
  }

  keys(): IterableIterator<string> {
    return this.#kv.keys();
  }

  has(key: string): boolean {
    return this.#kv.has(key);
  }

  get(key: string): MetadataValue | undefined {
    return this.#kv.get(key);
  }

  /** The `InvalidArgument` for a bad value of `key`. */
  refuse(key: string, why: string): EngineError {
    return EngineError.invalidArgument(`${this.file}: metadata ${key}: ${why}`);
  }

  #need(key: string, what: string): MetadataValue {
    const v = this.#kv.get(key);
    if (v === undefined) throw this.refuse(key, `missing (expected ${what})`);
    return v;
  }

  #asInt(key: string, v: unknown, what: string): number {
    const n = typeof v === "bigint" && v <= BigInt(Number.MAX_SAFE_INTEGER) &&
        v >= -BigInt(Number.MAX_SAFE_INTEGER)
      ? Number(v)
      : v;
    if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) {
      throw this.refuse(key, `expected ${what}, got ${describe(v)}`);
    }
    return n;
  }

  /** A non-negative integer (any integer type of the file). */
  uint(key: string, fallback?: number): number {
    if (!this.has(key) && fallback !== undefined) return fallback;
    return this.#asInt(key, this.#need(key, "an unsigned integer"), "an unsigned integer");
  }

  /** A positive integer. */
  count(key: string, fallback?: number): number {
    const n = this.uint(key, fallback);
    if (n === 0) throw this.refuse(key, "expected a positive integer, got 0");
    return n;
  }

  /** A finite positive number. */
  positive(key: string, fallback?: number): number {
    if (!this.has(key) && fallback !== undefined) return fallback;
    const v = this.#need(key, "a positive number");
    if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
      throw this.refuse(key, `expected a positive number, got ${describe(v)}`);
    }
    return shortestF32(v);
  }

  string(key: string, fallback?: string): string {
    if (!this.has(key) && fallback !== undefined) return fallback;
    const v = this.#need(key, "a string");
    if (typeof v !== "string") throw this.refuse(key, `expected a string, got ${describe(v)}`);
    return v;
  }

  bool(key: string, fallback?: boolean): boolean {
    if (!this.has(key) && fallback !== undefined) return fallback;
    const v = this.#need(key, "a boolean");
    if (typeof v !== "boolean") throw this.refuse(key, `expected a boolean, got ${describe(v)}`);
    return v;
  }

  /** An array of strings. */
  strings(key: string): string[] {
    const v = this.#need(key, "an array of strings");
    if (!Array.isArray(v) || !v.every((s) => typeof s === "string")) {
      throw this.refuse(key, `expected an array of strings, got ${describe(v)}`);
    }
    return v as string[];
  }

  /** An array of finite numbers. */
  numbers(key: string): number[] {
    const v = this.#need(key, "an array of numbers");
    if (!Array.isArray(v) || !v.every((s) => typeof s === "number" && Number.isFinite(s))) {
      throw this.refuse(key, `expected an array of numbers, got ${describe(v)}`);
    }
    return v as number[];
  }

  /** An array of non-negative integers. */
  uints(key: string): number[] {
    const v = this.#need(key, "an array of unsigned integers");
    if (!Array.isArray(v)) {
      throw this.refuse(key, `expected an array of unsigned integers, got ${describe(v)}`);
    }
    return v.map((x) => this.#asInt(key, x, "an array of unsigned integers"));
  }
}
