/**
 * `comparePrompt`, the comparison `deno task verify` makes, on hand-made logits (no GPU): the
 * scaled max |err| bound, the relative L2 bound, greedy agreement where the margin is wide, and
 * non-finite logits.
 */
import { ok, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { comparePrompt, type PromptLogits, type ReferencePrompt, tolerance } from "./verify.ts";

/** Two prompt positions and two greedy steps over a vocabulary of 4; logits up to 20. */
const PROMPT: ReferencePrompt = {
  input_ids: [1, 2],
  logits: [[20, -3, 1, 0.5], [2, 10, -1, 0]],
  greedy_tokens: [1, 0],
  greedy_margins: [8, 1e-4],
  greedy_step_logits: [[2, 10, -1, 0], [4, 4 - 1e-4, 0, -2]],
};

/** The reference's own logits, with `edit` applied to copies. */
function logits(edit: (rows: number[][]) => void = () => {}): PromptLogits {
  const rows = [...PROMPT.logits, PROMPT.greedy_step_logits[1]!].map((r) => [...r]);
  edit(rows);
  return { prompt: rows.slice(0, 2), steps: rows.slice(1, 3) };
}

const F32 = tolerance("f32");

Deno.test("comparePrompt: the max |err| bound scales with max(1, max |logit|)", () => {
  const exact = comparePrompt(PROMPT, 0, logits(), F32);
  ok(exact.passed);
  equal(exact.max_abs_ref, 20);
  equal(exact.max_abs_bound, F32.maxAbs * 20);
  // One logit just under and just over the scaled bound (2e-4 here), relative L2 left out.
  const maxOnly = { maxAbs: F32.maxAbs, relL2: Infinity };
  ok(comparePrompt(PROMPT, 0, logits((r) => r[0]![1]! += 1.9e-4), maxOnly).passed);
  ok(!comparePrompt(PROMPT, 0, logits((r) => r[0]![1]! += 2.1e-4), maxOnly).passed);
  // Logits of magnitude ≤ 1 get the unscaled bound, 1e-5.
  const row = [0.5, -0.25, 0, 0];
  const small: ReferencePrompt = {
    input_ids: [1],
    logits: [row],
    greedy_tokens: [0],
    greedy_margins: [0.5],
    greedy_step_logits: [row],
  };
  const off = (e: number): PromptLogits => ({ prompt: [[0.5 + e, -0.25, 0, 0]], steps: [row] });
  ok(comparePrompt(small, 0, off(0.9e-5), maxOnly).passed);
  ok(!comparePrompt(small, 0, off(1.1e-5), maxOnly).passed);
});

Deno.test("comparePrompt: relative L2 fails errors each within max |err|", () => {
  // Every logit off by 1.5e-4, under the max bound of 2e-4: relative L2 is 6e-4 / 25.6 = 2.3e-5.
  const spread = comparePrompt(
    PROMPT,
    0,
    logits((rows) => rows.forEach((r) => r.forEach((_, i) => r[i]! += 1.5e-4))),
    F32,
  );
  ok(spread.max_abs_err <= spread.max_abs_bound);
  ok(spread.rel_l2 > F32.relL2 && !spread.passed, JSON.stringify(spread));
  // The same on one logit only is within both bounds.
  const one = comparePrompt(PROMPT, 0, logits((r) => r[0]![1]! += 1e-4), F32);
  ok(one.passed, JSON.stringify(one));
});

Deno.test("comparePrompt: greedy tokens count only where the margin is wide; NaN fails", () => {
  // Step 1's margin (1e-4) is below twice the bound (4e-4): a flipped argmax there is not checked.
  const flip = (r: number[][]) => r[2]![1]! += 1.5e-4;
  const flipped = comparePrompt(PROMPT, 0, logits(flip), { maxAbs: F32.maxAbs, relL2: Infinity });
  equal(flipped.greedy_checked, 1);
  equal(flipped.greedy_agree, 1);
  ok(flipped.passed);
  // A tighter bound checks both steps and counts the flip.
  const tight = comparePrompt(PROMPT, 0, logits(flip), { maxAbs: 1e-6, relL2: Infinity });
  equal(tight.greedy_checked, 2);
  equal(tight.greedy_agree, 1);
  ok(!tight.passed);
  ok(!comparePrompt(PROMPT, 0, logits((r) => r[1]![3] = NaN), F32).passed);
  ok(!comparePrompt(PROMPT, 0, logits((r) => r[1]![3] = Infinity), F32).passed);
});

Deno.test("comparePrompt: rows missing on either side are an InvalidArgument", () => {
  const invalid = (e: unknown) => e instanceof EngineError && e.type === "InvalidArgument";
  throws(() => comparePrompt(PROMPT, 0, { prompt: logits().prompt, steps: [] }, F32), invalid);
  throws(
    () => comparePrompt({ ...PROMPT, greedy_margins: [8] }, 0, logits(), F32),
    invalid,
  );
  throws(
    () => comparePrompt(PROMPT, 0, logits((r) => r[0]!.pop()), F32),
    invalid,
  );
});

Deno.test("comparePrompt: a reference's own error widens both bounds by that much", () => {
  const maxOnly = { maxAbs: F32.maxAbs, relL2: Infinity };
  // 1e-3 off in one logit: over the f32 bound of 2e-4, within it plus a reference error of 1e-3.
  const got = logits((r) => r[0]![1]! += 1e-3);
  ok(!comparePrompt(PROMPT, 0, got, maxOnly).passed);
  const widened = comparePrompt(PROMPT, 0, got, maxOnly, 1e-3);
  ok(widened.passed, JSON.stringify(widened));
  equal(widened.max_abs_bound, F32.maxAbs * 20 + 1e-3);
  // Every logit 5e-4 off: relative L2 fails the f32 bound, passes with the reference's 1e-3.
  const spread = logits((rows) => rows.forEach((r) => r.forEach((_, i) => r[i]! += 5e-4)));
  ok(!comparePrompt(PROMPT, 0, spread, { ...F32, maxAbs: 1 }).passed);
  ok(comparePrompt(PROMPT, 0, spread, { ...F32, maxAbs: 1 }, 1e-3).passed);
});

Deno.test("comparePrompt: teacher-forced argmax agreement where the reference margin is wide", () => {
  // Row 0's top (20) leads by 19, row 1's (10) by 8: both checked; flip row 1's argmax.
  const same = comparePrompt(PROMPT, 0, logits(), F32);
  equal(`${same.argmax_agree}/${same.argmax_checked}`, "2/2");
  // A bound of 0.1 · 20 = 2 (the flip itself fails it): margins over 4 are checked.
  const flipped = comparePrompt(PROMPT, 0, logits((r) => r[1]![2]! = 11), {
    maxAbs: 0.1,
    relL2: Infinity,
  });
  equal(`${flipped.argmax_agree}/${flipped.argmax_checked}`, "1/2");
});
