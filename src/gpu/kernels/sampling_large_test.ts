/**
 * The sampler on a Qwen2.5-sized vocabulary (151,936 tokens): top-k, top-p, both, and min-p over
 * spread logits, logits in a few heavy tie groups and logits with a few dominant tokens, against
 * the float64 reference, with 20 alternatives' logprobs. The radix select's 64-bit mass sums carry here (a row's masses pass
 * 2^32 fixed-point units many times over).
 */
import { ok, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { f32Buffer, seeded } from "../../../test/support/kernel_harness.ts";
import { assertClose, testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import { assertReported, reportedRow } from "../../../test/support/logprobs.ts";
import {
  type History,
  logSoftmax,
  referenceDistribution,
  referenceDraw,
  type SamplingParams,
  truncatedLogits,
} from "../../reference/kernels/sampling.ts";
import { MAX_SAMPLER_VOCAB, Sampler, type SeqSampling } from "./sampling.ts";

const V = 151_936;
const none: History = { tokens: [], outputStart: 0 };

/** Rows rounded to f32, as the GPU sees them. */
const f32Row = (v: ArrayLike<number>): Float64Array => Float64Array.from(Float32Array.from(v));

const rows: Record<string, Float64Array> = {
  spread: f32Row(seeded(11, V, 4)),
  // 13 values (-3, -2.5, ..., 3), about 11,700 tokens each.
  ties: f32Row(Array.from(seeded(12, V, 3), (v) => Math.round(v * 2) / 2)),
  dominant: f32Row(
    seeded(13, V, 2).map((v, i) => {
      const top = [14, 13.5, 13.5, 12, 11, 10];
      const at = [7, 90_001, 151_935, 40_000, 3, 120_000].indexOf(i);
      return at >= 0 ? top[at]! : v;
    }),
  ),
};

const settings: SamplingParams[] = [
  { top_k: 50 },
  { top_k: 20_000 },
  { top_p: 0.9 },
  { temperature: 0.8, top_k: 1000, top_p: 0.7 },
  { min_p: 0.05 },
  { temperature: 1.2, top_k: 30_000, top_p: 0.95, min_p: 0.02 },
];

const cases = Object.entries(rows).flatMap(([shape, row]) =>
  settings.map((options) => ({ shape, row, options }))
);

/** The reference CDF just before and just after token `t`. */
function cdfAround(probs: Float64Array, t: number): [number, number] {
  let before = 0;
  for (let i = 0; i < t; i++) before += probs[i]!;
  return [before, before + probs[t]!];
}

Deno.test("151,936 tokens: top-k, top-p, top-k + top-p and min-p match the float64 reference; draws for fixed u; logprobs", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const sampler = new Sampler(device, cases.length, V);
    const logits = f32Buffer(device, "large:logits", cases.flatMap((c) => Array.from(c.row)));
    const draws = [[0.5, 0.001, 0.999], [0.25, 0.75, 0.1]];
    let exact = 0, total = 0;
    const refs = cases.map((c) => referenceDistribution(c.row, c.options, none));
    // (no case is greedy: the logprobs are those of the truncated distribution)
    const lps = cases.map((c) => logSoftmax(truncatedLogits(c.row, c.options, none)));
    for (const [round, us] of draws.entries()) {
      const seqs: SeqSampling[] = cases.map((c, i) => ({
        ...c.options,
        history: none,
        u: us[i % us.length]!,
        logprobs: 20,
      }));
      const r = await sampler.sample(logits, seqs, round === 0);
      cases.forEach((c, i) => {
        const what = `${c.shape} ${JSON.stringify(c.options)}`;
        const ref = refs[i]!;
        if (r.probs) {
          const gpu = r.probs.subarray(i * V, (i + 1) * V);
          let kept = 0;
          for (let t = 0; t < V; t++) {
            equal(gpu[t]! > 0, ref[t]! > 0, `${what}: token ${t} kept on one side only`);
            if (ref[t]! > 0) kept++;
          }
          ok(kept > 1 && kept < V, `${what}: ${kept} tokens kept, so the filter matters`);
          // f32 sums over up to 10^5 tokens: the worst measured on lavapipe takes 17 % of this
          // bound (the bound was 2e-7 + 2e-4·|ref|).
          assertClose(gpu, ref, 2e-7, 2e-6, what);
        }
        // f32 sums over ~10^5 tokens may move a draw to a neighbour whose CDF interval lies
        // within 1e-5 of u; the reference interval of the GPU's token must contain u that closely.
        // Logprobs over ~10^5 tokens' f32 sum: the worst measured on lavapipe takes 23 % of this.
        assertReported(reportedRow(r, i), lps[i]!, 20, what, { tol: 2e-6, eps: 2e-6 });
        const token = r.tokens[i]!, u = seqs[i]!.u!;
        ok(ref[token]! > 0, `${what}: drew token ${token} of probability 0`);
        const [lo, hi] = cdfAround(ref, token);
        ok(u >= lo - 1e-5 && u <= hi + 1e-5, `${what}: u ${u} outside [${lo}, ${hi}] of ${token}`);
        if (token === referenceDraw(ref, u)) exact++;
        total++;
      });
    }
    ok(exact >= total - 2, `only ${exact}/${total} draws equal the reference draw`);
    sampler.destroy();
    logits.destroy();
  });
});

Deno.test("151,936 tokens, heavy ties: top-k and top-p keep whole tie groups", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const row = rows.ties!;
    const seqs: SeqSampling[] = [
      { top_k: 50, history: none, u: 0.5 },
      { top_p: 0.3, history: none, u: 0.5 },
      { top_k: 1, history: none, logprobs: 0 }, // greedy: ties to the lowest id
    ];
    const sampler = new Sampler(device, seqs.length, V);
    const logits = f32Buffer(device, "ties:logits", [...row, ...row, ...row]);
    const r = await sampler.sample(logits, seqs, true);
    const top = Math.max(...new Set(row));
    const group = (v: number) => row.filter((x) => x === v).length;
    const keptCount = (s: number) => r.probs!.subarray(s * V, (s + 1) * V).filter((p) => p > 0);
    equal(keptCount(0).length, group(top), "top-k 50 keeps every token tied at the top");
    // top-p 0.3: the top group holds ~1/4.6 of the mass, so the next group crosses and is kept.
    equal(keptCount(1).length, group(top) + group(top - 0.5), "top-p keeps the crossing group");
    equal(r.tokens[2], row.indexOf(top), "greedy: the lowest id among the tied maxima");
    sampler.destroy();
    logits.destroy();
  });
});

Deno.test("sampler rejects a vocabulary beyond its fixed-point mass range, or no sequences", () => {
  const device = {} as GPUDevice; // rejected before any allocation
  throws(() => new Sampler(device, 1, MAX_SAMPLER_VOCAB + 1), EngineError);
  throws(() => new Sampler(device, 1, 0), EngineError);
  throws(() => new Sampler(device, 0, 100), EngineError);
});
