/**
 * The rotary fields of an HF `config.json` beyond the base and scaling (`rope_config.ts`): the
 * partial rotary width, multi-section RoPE's sections, and the LongRoPE factor lists' length. A
 * value Kiln cannot use is refused naming its key.
 */
import { describe } from "../contract/describe.ts";
import { type Json, refuse } from "./config_fields.ts";
import type { RopeScaling } from "./rope.ts";

/** The elements of each head `partial_rotary_factor` rotates, or undefined for all of them. */
export function partialRotaryDim(cfg: Json, headDim: number): number | undefined {
  // transformers 5 keeps it in rope_parameters (Qwen3.5).
  const params = cfg.rope_parameters;
  const rotary = cfg.partial_rotary_factor ??
    (typeof params === "object" && params !== null
      ? (params as Json).partial_rotary_factor
      : undefined);
  if (rotary === undefined || rotary === null || rotary === 1) return undefined;
  const dim = typeof rotary === "number" ? Math.floor(headDim * rotary) : NaN;
  if (!(rotary as number > 0 && rotary as number < 1) || dim % 2 !== 0 || dim === 0) {
    throw refuse(
      "partial_rotary_factor",
      `expected a fraction of head_dim ${headDim} giving an even count, got ${describe(rotary)}`,
    );
  }
  return dim;
}

/** `rope_parameters.mrope_section`: non-negative counts of at most `rotated / 2` pairs in all. */
export function ropeSectionsOf(cfg: Json, rotated: number): number[] | undefined {
  const params = cfg.rope_parameters;
  const v = typeof params === "object" && params !== null
    ? (params as Json).mrope_section
    : undefined;
  if (v === undefined || v === null) return undefined;
  const ok = Array.isArray(v) && v.length <= 4 &&
    v.every((n) => Number.isInteger(n) && n >= 0) &&
    (v as number[]).reduce((a, b) => a + b, 0) <= rotated / 2;
  if (!ok) {
    throw refuse(
      "rope_parameters.mrope_section",
      `expected up to 4 counts of at most ${rotated / 2} pairs in all, got ${describe(v)}`,
    );
  }
  const out = [...v as number[]];
  while (out.length > 0 && out[out.length - 1] === 0) out.pop();
  return out;
}

/** A `longrope` scaling's factor lists must hold one factor per rotated pair (`rotated / 2`). */
export function checkLongropeFactors(scaling: RopeScaling, rotated: number): void {
  if (scaling.type !== "longrope") return;
  const half = rotated / 2;
  for (
    const [k, list] of [["short_factor", scaling.shortFactor], [
      "long_factor",
      scaling.longFactor,
    ]] as const
  ) {
    if (list.length !== half) {
      throw refuse(
        `rope_scaling.${k}`,
        `${list.length} factors, expected ${half} (rotated dims / 2)`,
      );
    }
  }
}
