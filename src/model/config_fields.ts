/**
 * Readers of the positive sizes and numbers of an HF `config.json`, shared by the config reader
 * (`config.ts`) and the RoPE reader (`rope_config.ts`). A value Kiln cannot use is refused with
 * `InvalidArgument` naming `config.<field>`.
 */
import { describe } from "../contract/describe.ts";
import { EngineError } from "../contract/errors.ts";

/** A parsed `config.json` object (or one of its nested objects). */
export type Json = Record<string, unknown>;

/** The refusal of `config.<key>`, saying `why`. */
export function refuse(key: string, why: string): EngineError {
  return EngineError.invalidArgument(`config.${key}: ${why}`);
}

/** Sizes and counts above this are refused: no buffer Kiln could make is that large. */
const MAX_INT = 0x7fff_ffff;

/** `c[key]` (else `fallback`) as a positive integer up to 2^31-1, refused as `shown`. */
export function positiveInt(c: Json, key: string, shown: string, fallback?: number): number {
  const v = c[key] ?? fallback;
  if (typeof v !== "number" || !Number.isInteger(v) || v <= 0 || v > MAX_INT) {
    throw refuse(
      shown,
      v === undefined ? "missing" : `expected a positive integer up to 2^31-1, got ${describe(v)}`,
    );
  }
  return v;
}

/** `c[key]` (else `fallback`) as a finite positive number, refused as `shown`. */
export function positiveNumber(c: Json, key: string, shown: string, fallback?: number): number {
  const v = c[key] ?? fallback;
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
    throw refuse(
      shown,
      v === undefined ? "missing" : `expected a positive number, got ${describe(v)}`,
    );
  }
  return v;
}
