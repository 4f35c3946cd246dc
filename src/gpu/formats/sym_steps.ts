/**
 * The symmetric step search that Q3_K's and Q6_K's encoders share: per sub-block of 16 weights a
 * signed step for levels lo..hi (lo = −hi − 1), then a signed integer scale of that step against
 * the super-block's `d`, rounded and tried ±1. Only the level and scale ranges, and how many
 * tenths either side of the extreme levels the step search tries, differ between them.
 */
import { clamp, largestMagnitude, roundHalfAway } from "./block.ts";

/** An inclusive integer range [lo, hi]. */
export type Levels = readonly [number, number];

/** The level of x for `step`, in `levels` (0 when the step is 0). */
export const symLevel = (x: number, step: number, [lo, hi]: Levels): number =>
  step === 0 ? 0 : clamp(roundHalfAway(x / step), lo, hi);

/** Squared error of x[from..from+16) as step·q, q in `levels`. */
export function symError(x: ArrayLike<number>, from: number, step: number, levels: Levels): number {
  let err = 0;
  for (let i = from; i < from + 16; i++) err += (x[i]! - step * symLevel(x[i]!, step, levels)) ** 2;
  return err;
}

/**
 * A signed step for x[from..from+16) ≈ step·q, q in `levels`: the extreme value mapped near lo
 * or near hi, each tried `tenths` tenths of a level either side, the least squared error kept.
 */
export function fitSymStep(
  x: ArrayLike<number>,
  from: number,
  levels: Levels,
  tenths: number,
): number {
  const [lo, hi] = levels;
  const max = largestMagnitude(x, from, 16);
  if (max === 0) return 0;
  let best = max / lo, bestErr = symError(x, from, best, levels);
  for (let c = -tenths; c <= tenths; c++) {
    for (const step of [max / -(-lo + c / 10), max / (hi + c / 10)]) {
      const err = symError(x, from, step, levels);
      if (err < bestErr) [best, bestErr] = [step, err];
    }
  }
  return best;
}

/**
 * The scale (in `scales`) of sub-block x[from..from+16) with the fitted `step` under the
 * super-block's `d`: step / d rounded, and that ±1, the least squared error with `levels` kept.
 */
export function symScale(
  x: ArrayLike<number>,
  from: number,
  step: number,
  d: number,
  scales: Levels,
  levels: Levels,
): number {
  const [lo, hi] = scales;
  const s0 = d === 0 ? 0 : clamp(roundHalfAway(step / d), lo, hi);
  let sc = s0, bestErr = Infinity;
  for (const s of [s0, s0 - 1, s0 + 1]) {
    if (s < lo || s > hi) continue;
    const err = symError(x, from, d * s, levels);
    if (err < bestErr) [sc, bestErr] = [s, err];
  }
  return sc;
}
