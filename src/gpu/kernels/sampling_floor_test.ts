/** Temperatures too small for f32 sample as greedy, on the GPU and in the reference. */
import { deepStrictEqual, ok } from "node:assert/strict";
import { f32Buffer } from "../../../test/support/kernel_harness.ts";
import { testGpu, withErrorScopes } from "../../../test/support/gpu.ts";
import {
  isGreedy,
  MIN_TEMPERATURE,
  referenceDistribution,
} from "../../reference/kernels/sampling.ts";
import { Sampler, type SeqSampling } from "./sampling.ts";

Deno.test("temperature below MIN_TEMPERATURE draws the argmax (1e-38 used to give token 0)", async () => {
  const V = 37;
  // The best logit is not token 0, and every logit / 1e-38 overflows f32.
  const logits = Array.from({ length: V }, (_, i) => 5 + Math.sin(i * 1.7) * 3);
  const best = logits.indexOf(Math.max(...logits));
  ok(best !== 0);
  const temps = [1e-38, 1e-30, 1e-6, MIN_TEMPERATURE / 2];
  for (const t of temps) ok(isGreedy({ temperature: t }), `${t} is greedy`);
  ok(!isGreedy({ temperature: MIN_TEMPERATURE }));
  const ref = referenceDistribution(logits, { temperature: 1e-38 }, { tokens: [], outputStart: 0 });
  ok(ref.every((p) => Number.isFinite(p)), "reference stays finite");
  const { device } = await testGpu();
  await withErrorScopes(device, async () => {
    const seqs: SeqSampling[] = temps.map((temperature, i) => ({
      temperature,
      history: { tokens: [], outputStart: 0 },
      seed: 1 + i,
      step: 0,
    }));
    const sampler = new Sampler(device, seqs.length, V);
    const buf = f32Buffer(device, "floor:logits", seqs.flatMap(() => logits));
    const { tokens } = await sampler.sample(buf, seqs);
    deepStrictEqual([...tokens], temps.map(() => best));
    sampler.destroy();
    buf.destroy();
  });
});
