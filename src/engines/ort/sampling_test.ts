/**
 * OrtEngine's CPU sampler (the wasm EP's) against the WGSL `Sampler` its WebGPU EP uses, on the
 * same logits: the same tokens, and logprobs by the same rule (the distribution drawn from), with
 * top lists of the same tokens, shorter where masks or truncations leave fewer.
 */
import { deepStrictEqual, strictEqual as equal } from "node:assert/strict";
import { f32Buffer, seeded } from "../../../test/support/kernel_harness.ts";
import { assertClose, testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import { reportedRow } from "../../../test/support/logprobs.ts";
import { tokenBitmask } from "../../gpu/token_mask_bits.ts";
import { NO_TOKEN, Sampler, type SeqSampling } from "../../gpu/kernels/sampling.ts";
import { cpuSample } from "./sampling.ts";

const V = 300;

Deno.test("CPU sampler and WGSL sampler: same tokens, same logprobs and top lists under masks and truncations", async () => {
  const h = { tokens: [4, 9, 9, 17], outputStart: 2 };
  const mask = tokenBitmask(V, [2, 40, 41, 299]);
  const seqs: SeqSampling[] = [
    { temperature: 0, history: h, logprobs: 5 },
    { temperature: 0, history: h, logprobs: 5, tokenMask: tokenBitmask(V, [40]) },
    { temperature: 0.8, seed: 3, step: 1, history: h, logprobs: 6, tokenMask: mask },
    { temperature: 1.1, top_k: 3, seed: 4, step: 2, history: h, logprobs: 6 },
    { temperature: 0.7, top_p: 0.6, min_p: 0.05, seed: 5, step: 0, history: h, logprobs: 20 },
    { temperature: 1, allowed: [7, 8], seed: 6, step: 0, history: h, logprobs: 5 },
    {
      temperature: 0.9,
      badWords: [[17, 3], [5]],
      repetition_penalty: 1.2,
      history: h,
      logprobs: 4,
    },
    { temperature: 0, banned: [40, 41], history: h, logprobs: 3, tokenMask: mask },
    { temperature: 0.6, top_k: 1, history: h, logprobs: 2 },
    { temperature: 0, allowed: [1], history: h, logprobs: 2, tokenMask: mask }, // none left
  ];
  const raw = Float64Array.from(seeded(91, V * seqs.length, 3));
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const sampler = new Sampler(device, seqs.length, V);
    const logits = f32Buffer(device, "ort_sampling:logits", raw);
    const r = await sampler.sample(logits, seqs);
    seqs.forEach((seq, s) => {
      const what = `row ${s}`;
      const gpu = reportedRow(r, s);
      const cpu = cpuSample(raw.subarray(s * V, (s + 1) * V), seq);
      equal(cpu.token, gpu.token, `${what}: token`);
      if (cpu.token === NO_TOKEN) return;
      assertClose([gpu.logprob], [cpu.logprob], 2e-6, 1e-6, `${what}: logprob`);
      deepStrictEqual(Array.from(cpu.top!.ids), Array.from(gpu.ids), `${what}: top ids`);
      assertClose(gpu.logprobs, cpu.top!.logprobs, 2e-6, 1e-6, `${what}: top logprobs`);
    });
    equal(cpuSample(raw.subarray(V, 2 * V), seqs[1]!).top!.ids.length, 1, "one token allowed");
    equal(cpuSample(raw.subarray(5 * V, 6 * V), seqs[5]!).top!.ids.length, 2, "two allowed");
    sampler.destroy();
    logits.destroy();
  });
});
