/**
 * Guided decoding's token bitmask on the GPU over odd vocab sizes (not multiples of 32 or of the
 * 256-wide workgroup), on both paths (`fused` in the sampling kernel, `pass` before it): the pass
 * writes what the TS reference gives, and the sampler's tokens, logprobs, top alternatives (only
 * tokens that can be drawn) and distributions are the float64 reference's over the masked logits,
 * the same on both paths, with given draws. Free rows sampled beside constrained ones are as sampled alone; a row left no
 * token yields NO_TOKEN and no other row is affected.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { readF32 } from "../buffers.ts";
import { f32Buffer, seeded } from "../../../test/support/kernel_harness.ts";
import { randomMask } from "../../../test/support/token_masks.ts";
import { assertClose, testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import { assertReported, reportedRow } from "../../../test/support/logprobs.ts";
import {
  referenceArgmax,
  referenceDistribution,
  referenceDraw,
  referenceLogprobs,
  type SamplingParams,
} from "../../reference/kernels/sampling.ts";
import {
  allows,
  allowsNone,
  applyTokenMask,
  freeMask,
  MASKED_LOGIT,
  tokenBitmask,
} from "../token_mask_bits.ts";
import { NO_TOKEN, Sampler, type SampleResult, type SeqSampling } from "./sampling.ts";
import type { TokenMaskPath } from "./token_mask.ts";

const VOCABS = [1, 33, 260, 1001, 4099];
const PATHS: TokenMaskPath[] = ["fused", "pass"];
const PROB_TOL = 1.5e-6;
const LOGPROB_TOL = 3e-6;

/** The batch: constrained rows of every sampling kind, free rows, and rows left no token. */
function batch(vocab: number): SeqSampling[] {
  const h = { tokens: [0, vocab - 1, 2 % vocab, vocab - 1], outputStart: 2 };
  const digits = tokenBitmask(vocab, [vocab - 1, Math.floor(vocab / 2), 7 % vocab]);
  return [
    { temperature: 0, history: h, logprobs: 5, tokenMask: randomMask(vocab, 1, 0.3) },
    { temperature: 0.8, u: 0.37, history: h, logprobs: 3, tokenMask: randomMask(vocab, 2, 0.1) },
    { temperature: 1.7, top_k: 5, u: 0.91, history: h, tokenMask: randomMask(vocab, 3, 0.5) },
    { temperature: 0.7, top_p: 0.8, min_p: 0.01, u: 0.05, history: h, tokenMask: digits },
    {
      temperature: 1.3,
      repetition_penalty: 1.3,
      frequency_penalty: 0.5,
      presence_penalty: 0.2,
      u: 0.6,
      history: h,
      tokenMask: randomMask(vocab, 4, 0.7),
    },
    { temperature: 0.9, u: 0.5, history: h, logprobs: 2 }, // free
    { temperature: 0, history: h, tokenMask: freeMask(vocab) }, // all ones: free too
    { temperature: 0.9, u: 0.2, history: h, tokenMask: new Uint32Array(freeMask(vocab).length) },
    { temperature: 0, history: h, allowed: [vocab - 1], banned: [vocab - 1] }, // none left
  ];
}

/** Logits with a tie at the top and a spread wide enough that masks change the choice. */
function logitsFor(vocab: number, rows: number): Float32Array {
  const out = Float32Array.from(seeded(vocab * 7 + 1, vocab * rows, 4));
  for (let s = 0; s < rows && vocab > 2; s++) out[s * vocab + 1] = out[s * vocab + 2] = 5;
  return out;
}

async function run(
  device: GPUDevice,
  vocab: number,
  path: TokenMaskPath,
  seqs: SeqSampling[],
  logits: Float32Array,
): Promise<{ r: SampleResult; after: Float32Array }> {
  const sampler = new Sampler(device, seqs.length, vocab, { maskPath: path });
  const buffer = f32Buffer(device, "token_mask:logits", logits);
  const r = await sampler.sample(buffer, seqs, true);
  const after = await readF32(device, buffer, logits.length);
  sampler.destroy();
  buffer.destroy();
  return { r, after };
}

Deno.test("token bitmask, fused and pass: the float64 reference over the masked logits, odd vocab sizes", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    for (const vocab of VOCABS) {
      const seqs = batch(vocab);
      const logits = logitsFor(vocab, seqs.length);
      const runs = [];
      for (const path of PATHS) {
        const { r, after } = await run(device, vocab, path, seqs, logits);
        runs.push(r);
        seqs.forEach((seq, s) => {
          const what = `vocab ${vocab} ${path} row ${s}`;
          const raw = logits.subarray(s * vocab, (s + 1) * vocab);
          const mask = seq.tokenMask ?? freeMask(vocab);
          const masked = applyTokenMask(raw, mask);
          // The pass masks the logits in place, exactly as the reference; fused leaves them.
          deepStrictEqual(
            [...after.subarray(s * vocab, (s + 1) * vocab)],
            [...Float32Array.from(path === "pass" ? masked : raw)],
            `${what}: logits after`,
          );
          const token = r.tokens[s]!;
          const left = (t: number) =>
            allows(mask, t) && (seq.allowed?.includes(t) ?? true) && !seq.banned?.includes(t);
          if (allowsNone(mask, vocab) || ![...masked.keys()].some(left)) {
            equal(token, NO_TOKEN, `${what}: nothing allowed`);
            return;
          }
          ok(allows(mask, token), `${what}: token ${token} is allowed`);
          const params: SamplingParams = seq;
          const probs = referenceDistribution(masked, params, seq.history);
          // (the sampler clamps top_k to the vocab: 1 is greedy)
          const greedy = seq.temperature === 0 || Math.min(seq.top_k ?? 0, vocab) === 1;
          const want = greedy
            ? referenceArgmax(processedArgmaxInput(masked, seq))
            : referenceDraw(probs, seq.u!);
          equal(token, want, `${what}: token`);
          // Logprobs of the distribution drawn from; the top list holds allowed tokens only.
          const lp = referenceLogprobs(
            masked,
            clamped(seq, vocab),
            seq.history,
          );
          const got = reportedRow(r, s);
          assertReported(got, lp, seq.logprobs ?? 0, what, { tol: LOGPROB_TOL, eps: 1e-6 });
          ok(Array.from(got.ids).every((t) => allows(mask, t)), `${what}: top ids allowed`);
          if (!greedy) {
            assertClose(
              r.probs!.subarray(s * vocab, (s + 1) * vocab),
              probs,
              PROB_TOL,
              0,
              `${what}: distribution`,
            );
          }
        });
      }
      // Both paths choose the same tokens with the same logprobs, bit for bit.
      deepStrictEqual([...runs[0]!.tokens], [...runs[1]!.tokens], `vocab ${vocab}: tokens`);
      deepStrictEqual([...runs[0]!.logprobs], [...runs[1]!.logprobs], `vocab ${vocab}: logprobs`);
    }
  });
});

/** The row's parameters as the sampler takes them (top_k clamped to the vocab). */
function clamped(seq: SeqSampling, vocab: number): SamplingParams {
  return seq.top_k === undefined ? seq : { ...seq, top_k: Math.min(seq.top_k, vocab) };
}

/** Greedy: the argmax of the masked logits after masks and penalties (no temperature). */
function processedArgmaxInput(masked: Float64Array, seq: SeqSampling): Float64Array {
  const allowed = seq.allowed ? new Set(seq.allowed) : undefined;
  const banned = new Set(seq.banned ?? []);
  return masked.map((v, i) =>
    v === MASKED_LOGIT || (allowed && !allowed.has(i)) || banned.has(i) ? -Infinity : v
  );
}

Deno.test("free rows beside constrained ones sample as they do in a batch without masks", async () => {
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    for (const vocab of [260, 1001]) {
      const seqs = batch(vocab);
      const logits = logitsFor(vocab, seqs.length);
      const free = seqs.map(({ tokenMask: _, allowed: __, ...rest }) => rest);
      const alone = (await run(device, vocab, "fused", free, logits)).r;
      for (const path of PATHS) {
        const { r } = await run(device, vocab, path, seqs, logits);
        for (const s of [5, 6]) {
          equal(r.tokens[s], alone.tokens[s], `vocab ${vocab} ${path} row ${s}`);
          equal(r.logprobs[s], alone.logprobs[s], `vocab ${vocab} ${path} row ${s} logprob`);
        }
      }
      ok(alone.tokens.every((t) => t < vocab), "with no masks every row gets a token");
      const { r } = await run(device, vocab, "fused", seqs, logits);
      ok([0, 1, 2, 3, 4].some((s) => r.tokens[s] !== alone.tokens[s]), "masks change choices");
    }
  });
});
