/**
 * Guided decoding's token bitmask: the sampling step's time with no bitmask, with it read by the
 * sampling kernel itself (`fused`), and with it applied by the `token_mask` pass before the
 * kernel (`pass`), in the same run on the same adapter, every row constrained (a tenth of the
 * vocabulary allowed) and greedy or sampled. Prints and writes JSON with ms per step.
 *
 *   deno run -A bench/kernels/token_mask.ts [--vocab N] [--seqs N] [--iters N] [--out FILE]
 */
import { acquireGpu } from "../../src/gpu/device.ts";
import { uploadBuffer } from "../../src/gpu/buffers.ts";
import { Sampler, type SeqSampling } from "../../src/gpu/kernels/sampling.ts";
import { tokenBitmask } from "../../src/gpu/token_mask_bits.ts";
import { seeded } from "../../test/support/kernel_harness.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";

const { flags } = runCli({
  name: "token_mask",
  command: "deno run -A bench/kernels/token_mask.ts",
  about: "The sampling step with no token bitmask, fused into the sampler, and as a pass " +
    "before it; prints and writes JSON.",
  flags: {
    vocab: { type: "integer", min: 2, help: "one vocabulary size (default 49152 and 151936)" },
    seqs: { type: "integer", min: 1, help: "one sequence count (default 1 and 8)" },
    iters: { type: "integer", min: 1, default: 4, help: "steps per timed submit" },
    rounds: { type: "integer", min: 1, default: 5, help: "timed rounds of the three modes" },
    out: {
      type: "string",
      arg: "FILE",
      default: "bench/results/token_mask-lavapipe.json",
      help: "the JSON report",
    },
  },
});
const vocabs = flags.vocab !== undefined ? [flags.vocab] : [49_152, 151_936];
const seqCounts = flags.seqs !== undefined ? [flags.seqs] : [1, 8];
const { device, caps } = await acquireGpu({ label: "bench-token-mask" });

/** Seconds per step: `iters` sampling steps in one submit. */
async function once(sampler: Sampler, logits: GPUBuffer, seqs: number): Promise<number> {
  const enc = device.createCommandEncoder({ label: "bench:token_mask" });
  for (let i = 0; i < flags.iters; i++) await sampler.encode(enc, logits, seqs);
  const t0 = performance.now();
  device.queue.submit([enc.finish()]);
  await device.queue.onSubmittedWorkDone();
  return (performance.now() - t0) / 1000 / flags.iters;
}

const MODES = ["free", "fused", "pass"] as const;

const rows = [];
for (const vocab of vocabs) {
  for (const n of seqCounts) {
    const data = Float32Array.from(seeded(vocab + n, vocab * n, 3));
    const allowed = [...Array(vocab).keys()].filter((i) => i % 10 === 3);
    const mask = tokenBitmask(vocab, allowed);
    for (const kind of ["greedy", "T=0.8 top_p=0.9"]) {
      const params = kind === "greedy" ? { temperature: 0 } : { temperature: 0.8, top_p: 0.9 };
      // The three modes take turns, round after round (a loaded machine drifts): the best
      // round of each after a warm-up.
      const setups = MODES.map((mode) => {
        const sampler = new Sampler(device, n, vocab, {
          maskPath: mode === "pass" ? "pass" : "fused",
        });
        const logits = uploadBuffer(device, "bench:logits", data);
        sampler.write(Array.from({ length: n }, (_, i): SeqSampling => ({
          ...params,
          history: { tokens: [1, 2, 3], outputStart: 3 },
          seed: i,
          ...(mode === "free" ? {} : { tokenMask: mask }),
        })));
        return { mode, sampler, logits };
      });
      const ms: Record<string, number> = {};
      for (let round = 0; round < flags.rounds + 1; round++) {
        for (const { mode, sampler, logits } of setups) {
          const t = (await once(sampler, logits, n)) * 1000;
          if (round > 0) ms[mode] = Math.min(ms[mode] ?? Infinity, t);
        }
      }
      for (const { sampler, logits } of setups) {
        sampler.destroy();
        logits.destroy();
      }
      const row = { vocab, seqs: n, kind, ms };
      rows.push(row);
      console.log(
        `vocab ${vocab} seqs ${n} ${kind}: free ${ms.free!.toFixed(2)} ms, fused ` +
          `${ms.fused!.toFixed(2)} ms, pass ${ms.pass!.toFixed(2)} ms`,
      );
    }
  }
}
await Deno.writeTextFile(
  flags.out,
  JSON.stringify(
    { adapter: caps.adapter, iters: flags.iters, rounds: flags.rounds, rows },
    null,
    2,
  ) + "\n",
);
