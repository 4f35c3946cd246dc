/**
 * Checks of reported logprobs against the float64 reference's (`referenceLogprobs`): the chosen
 * token's, and a top list that holds exactly the tokens the reference ranks first, no token that
 * cannot be drawn, no duplicate and no padding.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { referenceTop } from "../../src/reference/kernels/sampling.ts";
import { MAX_TOP_LOGPROBS, NO_TOKEN, type SampleResult } from "../../src/gpu/kernels/sampling.ts";
import { assertClose } from "./gpu.ts";

/** A token's reported logprob and top alternatives. */
export interface Reported {
  token: number;
  logprob: number;
  ids: ArrayLike<number>;
  logprobs: ArrayLike<number>;
}

/** How close a logprob must be: `tol + |ref| * eps`. */
export interface LogprobBound {
  tol: number;
  eps: number;
}

/**
 * Row `s` of a sampler's result: its top list cut where it ends. Throws when the list has a gap
 * (an end marker followed by an entry).
 */
export function reportedRow(r: SampleResult, s: number): Reported {
  const all = r.topIds.subarray(s * MAX_TOP_LOGPROBS, (s + 1) * MAX_TOP_LOGPROBS);
  const n = all.indexOf(NO_TOKEN) < 0 ? MAX_TOP_LOGPROBS : all.indexOf(NO_TOKEN);
  ok(all.subarray(n).every((t) => t === NO_TOKEN), `row ${s}: entries after the list's end`);
  return {
    token: r.tokens[s]!,
    logprob: r.logprobs[s]!,
    ids: all.subarray(0, n),
    logprobs: r.topLogprobs.subarray(s * MAX_TOP_LOGPROBS, s * MAX_TOP_LOGPROBS + n),
  };
}

/**
 * `got` against the reference logprobs `ref` of the same row with `n` alternatives asked for:
 * the chosen token can be drawn and has the reference's logprob; the list has
 * `min(n, tokens that can be drawn)` entries, distinct, each with its reference logprob, in the
 * reference's order (ties to the lowest id; entries whose reference logprobs lie within the bound
 * of each other may trade places).
 */
export function assertReported(
  got: Reported,
  ref: ArrayLike<number>,
  n: number,
  what: string,
  bound: LogprobBound,
): void {
  ok(ref[got.token]! > -Infinity, `${what}: token ${got.token} cannot be drawn`);
  assertClose([got.logprob], [ref[got.token]!], bound.tol, bound.eps, `${what}: logprob`);
  const want = referenceTop(ref, n);
  const ids = Array.from(got.ids);
  equal(ids.length, want.ids.length, `${what}: ${ids.length} alternatives, ${want.ids.length} due`);
  equal(new Set(ids).size, ids.length, `${what}: duplicate alternatives ${ids}`);
  ids.forEach((id, r) => {
    ok(ref[id]! > -Infinity, `${what}: alternative ${id} cannot be drawn`);
    const close = Math.abs(ref[id]! - want.logprobs[r]!) <=
      bound.tol + bound.eps * Math.abs(want.logprobs[r]!);
    ok(id === want.ids[r] || close, `${what}: rank ${r} is ${id}, ${want.ids[r]} due`);
  });
  assertClose(got.logprobs, ids.map((id) => ref[id]!), bound.tol, bound.eps, `${what}: top`);
}

/** Two reports of the same row, bit for bit. */
export function assertSameReport(a: Reported, b: Reported, what: string): void {
  deepStrictEqual(
    [a.token, a.logprob, Array.from(a.ids), Array.from(a.logprobs)],
    [b.token, b.logprob, Array.from(b.ids), Array.from(b.logprobs)],
    what,
  );
}
