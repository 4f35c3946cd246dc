/**
 * What the sampler reports as logprobs, on both bitmask paths, against the float64 reference
 * (`referenceLogprobs`, `referenceTop`) over odd vocab sizes: one rule for every mask (guided
 * bitmask, `allowed`, bad words, bans) and truncation (top-k, top-p, min-p), greedy and sampled;
 * top lists shorter than asked for where fewer tokens can be drawn, with no padding.
 */
import { strictEqual as equal } from "node:assert/strict";
import { f32Buffer, seeded } from "../../../test/support/kernel_harness.ts";
import { randomMask } from "../../../test/support/token_masks.ts";
import { testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import {
  assertReported,
  assertSameReport,
  type LogprobBound,
  reportedRow,
} from "../../../test/support/logprobs.ts";
import {
  bannedByBadWords,
  referenceDistribution,
  referenceDraw,
  referenceLogprobs,
  type SamplingParams,
} from "../../reference/kernels/sampling.ts";
import { applyTokenMask, freeMask, MASKED_LOGIT, tokenBitmask } from "../token_mask_bits.ts";
import { NO_TOKEN, Sampler, type SampleResult, type SeqSampling } from "./sampling.ts";
import type { TokenMaskPath } from "./token_mask.ts";

const VOCABS = [1, 33, 260, 1001, 4099];
const PATHS: TokenMaskPath[] = ["fused", "pass"];
// A logprob is a processed logit minus a log-sum-exp in f32, against float64.
const BOUND: LogprobBound = { tol: 2e-6, eps: 1e-6 };

/** Rows of every kind: masks leaving 0, 1, 2 or 3 tokens, truncations with and without one. */
function batch(V: number): SeqSampling[] {
  const h = { tokens: [0, V - 1, 2 % V, V - 1], outputStart: 2 };
  const one = tokenBitmask(V, [V - 1]);
  const two = tokenBitmask(V, [1 % V, V - 1]);
  const three = tokenBitmask(V, [0, Math.floor(V / 2), V - 1]);
  const wide = randomMask(V, 3, 0.3);
  const allowed = [3 % V, 10 % V, V - 1];
  return [
    { temperature: 0, history: h, logprobs: 5 },
    { temperature: 0, history: h, logprobs: 5, tokenMask: one },
    {
      temperature: 0,
      repetition_penalty: 1.3,
      frequency_penalty: 0.5,
      history: h,
      logprobs: 5,
      tokenMask: two,
    },
    { temperature: 0.8, u: 0.37, history: h, logprobs: 5, tokenMask: three },
    { temperature: 1.3, top_k: 5, u: 0.91, history: h, logprobs: 8 },
    { temperature: 1.3, top_k: 5, u: 0.6, history: h, logprobs: 8, tokenMask: wide },
    { temperature: 0.7, top_p: 0.8, u: 0.05, history: h, logprobs: 20 },
    { temperature: 0.9, top_p: 0.5, min_p: 0.1, u: 0.4, history: h, logprobs: 10, tokenMask: wide },
    { temperature: 1, min_p: 0.2, u: 0.7, history: h, logprobs: 20 },
    { temperature: 1, allowed, u: 0.7, history: h, logprobs: 5 },
    { temperature: 0, allowed, history: h, logprobs: 5 },
    { temperature: 0.9, badWords: [[1 % V], [V - 1, 4 % V]], u: 0.3, history: h, logprobs: 6 },
    { temperature: 0, banned: [1 % V, 2 % V], history: h, logprobs: 4 }, // stops before min_tokens
    { temperature: 0.7, top_k: 1, history: h, logprobs: 5 },
    { temperature: 0, history: h, logprobs: 5, tokenMask: new Uint32Array(one.length) },
    { temperature: 0.6, top_k: 3, u: 0.8, history: h, logprobs: 5, tokenMask: two },
    { temperature: 1.2, allowed: [V - 1, 0], u: 0.2, history: h, logprobs: 5, tokenMask: one },
  ];
}

/** Logits with a tie at the top (tokens 1 and 2) and a spread wide enough that masks matter. */
function logitsFor(V: number, rows: number): Float32Array {
  const out = Float32Array.from(seeded(V * 7 + 1, V * rows, 4));
  for (let s = 0; s < rows && V > 2; s++) out[s * V + 1] = out[s * V + 2] = 5;
  return out;
}

/** The reference's view of a row: the bitmask on the logits, bad words as bans, top-k clamped. */
function reference(seq: SeqSampling, raw: ArrayLike<number>, V: number) {
  const logits = applyTokenMask(raw, seq.tokenMask ?? freeMask(V));
  const banned = [
    ...(seq.banned ?? []),
    ...bannedByBadWords(seq.badWords ?? [], seq.history.tokens),
  ];
  const params: SamplingParams = {
    ...seq,
    banned,
    ...(seq.top_k !== undefined ? { top_k: Math.min(seq.top_k, V) } : {}),
  };
  const probs = referenceDistribution(logits, params, seq.history);
  return {
    lp: referenceLogprobs(logits, params, seq.history),
    probs,
    token: referenceDraw(probs, seq.u ?? 0.5),
  };
}

async function sample(
  device: GPUDevice,
  V: number,
  path: TokenMaskPath,
  seqs: SeqSampling[],
  logits: Float32Array,
): Promise<SampleResult> {
  const sampler = new Sampler(device, seqs.length, V, { maskPath: path });
  const buffer = f32Buffer(device, "logprobs:logits", logits);
  const r = await sampler.sample(buffer, seqs, true);
  sampler.destroy();
  buffer.destroy();
  return r;
}

Deno.test("logprobs are the drawn-from distribution's under every mask and truncation; shorter lists, no padding (fused and pass, odd vocab sizes)", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    for (const V of VOCABS) {
      const seqs = batch(V);
      const logits = logitsFor(V, seqs.length);
      const runs: SampleResult[] = [];
      for (const path of PATHS) {
        const r = await sample(device, V, path, seqs, logits);
        runs.push(r);
        seqs.forEach((seq, s) => {
          const what = `vocab ${V} ${path} row ${s}`;
          const ref = reference(seq, logits.subarray(s * V, (s + 1) * V), V);
          const got = reportedRow(r, s);
          if (!ref.lp.some((l) => l > -Infinity)) {
            equal(got.token, NO_TOKEN, `${what}: nothing can be drawn`);
            equal(got.logprob, MASKED_LOGIT, `${what}: logprob`);
            equal(got.ids.length, 0, `${what}: no alternatives`);
            return;
          }
          equal(got.token, ref.token, `${what}: token`);
          assertReported(got, ref.lp, seq.logprobs!, what, BOUND);
          const p = r.probs!.subarray(s * V, (s + 1) * V);
          // Sampled rows: the distribution written after the logprobs are read.
          if (seq.temperature !== 0 && seq.top_k !== 1 && V > 1) {
            ref.probs.forEach((q, t) => equal(p[t]! > 0, q > 0, `${what}: token ${t} kept`));
          }
        });
      }
      for (let s = 0; s < seqs.length; s++) {
        assertSameReport(reportedRow(runs[0]!, s), reportedRow(runs[1]!, s), `vocab ${V} row ${s}`);
      }
    }
  });
});

Deno.test("one rule: a token set as a guided bitmask, as allowed_token_ids, as bans of the rest and as top_k reports the same logprobs", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    for (const V of [33, 1001]) {
      const raw = Float32Array.from(seeded(V + 5, V, 3));
      const order = [...raw.keys()].sort((a, b) => raw[b]! - raw[a]! || a - b);
      for (const [k, temperature] of [[4, 1.3], [3, 0.8], [1, 0]] as const) {
        const set = order.slice(0, k);
        const rest = order.slice(k);
        const h = { tokens: [], outputStart: 0 };
        const base = { temperature, u: 0.45, history: h, logprobs: 6 };
        const seqs: SeqSampling[] = [
          { ...base, tokenMask: tokenBitmask(V, set) },
          { ...base, allowed: set },
          { ...base, banned: rest },
          { ...base, badWords: rest.map((t) => [t]) },
          ...(temperature > 0 ? [{ ...base, top_k: k }] : []),
        ];
        const logits = Float32Array.from(seqs.flatMap(() => [...raw]));
        const want = referenceLogprobs(raw, { temperature, allowed: set }, h);
        for (const path of PATHS) {
          const r = await sample(device, V, path, seqs, logits);
          const what = `vocab ${V} k ${k} T ${temperature} ${path}`;
          assertReported(reportedRow(r, 0), want, 6, `${what} bitmask`, BOUND);
          for (let s = 1; s < seqs.length; s++) {
            assertSameReport(
              reportedRow(r, s),
              reportedRow(r, 0),
              `${what}: row ${s} as the bitmask`,
            );
          }
          equal(reportedRow(r, 0).ids.length, Math.min(k, 6), `${what}: list length`);
        }
      }
    }
  });
});
