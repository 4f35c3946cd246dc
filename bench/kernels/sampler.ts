/**
 * The GPU sampler's step time, old against new in the same run on the same adapter: the former
 * kernel (top-k and top-p thresholds by 32-step bisection, read from git by `baseline.ts`)
 * and the current one (radix select), each as a whole
 * sampling step (clear and count the penalty history, then sample), over the same buffers.
 * Prints and writes JSON with ms per step, their ratio, and whether both drew the same tokens.
 *
 *   deno run -A bench/kernels/sampler.ts [--vocab N] [--seqs N] [--iters N] [--out FILE]
 */
import { acquireGpu } from "../../src/gpu/device.ts";
import { readBuffer, uploadBuffer } from "../../src/gpu/buffers.ts";
import { type Dispatch, encodeDispatches } from "../../src/gpu/dispatch.ts";
import { grid256, type KernelDispatch, prepareKernel } from "../../src/gpu/kernels/kernel.ts";
import { Sampler, type SeqSampling } from "../../src/gpu/kernels/sampling.ts";
import { seeded } from "../../test/support/kernel_harness.ts";
import type { SamplingParams } from "../../src/reference/kernels/sampling.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";
import { BASELINES, baselineSource } from "./baseline.ts";

const { flags } = runCli({
  name: "sampler",
  command: "deno run -A bench/kernels/sampler.ts",
  about: "The GPU sampler's step time, the former bisection kernel against the radix select; " +
    "prints and writes JSON.",
  flags: {
    vocab: { type: "integer", min: 2, help: "one vocabulary size (default 49152 and 151936)" },
    seqs: { type: "integer", min: 1, help: "one sequence count (default 1 and 8)" },
    iters: { type: "integer", min: 1, default: 1, help: "the fewest steps per timed submit" },
    out: {
      type: "string",
      arg: "FILE",
      default: "bench/results/sampler-lavapipe.json",
      help: "the JSON report",
    },
  },
});
const vocabs = flags.vocab !== undefined ? [flags.vocab] : [49_152, 151_936];
const seqCounts = flags.seqs !== undefined ? [flags.seqs] : [1, 8];
const minIters = flags.iters;
const outPath = flags.out;

const configs: Record<string, SamplingParams> = {
  "T=0.7 top_k=50 top_p=0.9": { temperature: 0.7, top_k: 50, top_p: 0.9 },
  "T=1 top_p=0.9": { temperature: 1, top_p: 0.9 },
  "T=1 top_k=50": { temperature: 1, top_k: 50 },
  "T=1 min_p=0.05": { temperature: 1, min_p: 0.05 },
  "greedy": { temperature: 0 },
};

const oldSource = await baselineSource("sampling");

const { device, caps } = await acquireGpu({ label: "bench-sampler" });
const oldPipeline = await device.createComputePipelineAsync({
  label: "bench:sampling_bisection",
  layout: "auto",
  compute: {
    module: device.createShaderModule({ label: "bench:sampling_bisection", code: oldSource }),
    entryPoint: "sample",
  },
});

/** Logits like a language model's: a spread tail and a few dominant tokens. */
function row(vocab: number, seed: number): Float32Array {
  const out = Float32Array.from(seeded(seed, vocab, 3));
  for (let j = 0; j < 8; j++) out[(j * 7919 + seed * 104_729) % vocab] = 9 + j * 0.5;
  return out;
}

/** Seconds per step: one submit of `iters` steps, the best of three after a warm-up. */
async function time(steps: readonly Dispatch[], iters: number): Promise<number> {
  const once = async () => {
    const enc = device.createCommandEncoder({ label: "bench:sampler" });
    for (let i = 0; i < iters; i++) encodeDispatches(enc, steps, "bench:sampler");
    const t0 = performance.now();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    return (performance.now() - t0) / 1000 / iters;
  };
  await once();
  return Math.min(await once(), await once(), await once());
}

const results: Record<string, unknown>[] = [];
for (const vocab of vocabs) {
  for (const seqs of seqCounts) {
    // Each sequence's history: one prompt token and one output token, in a GPU token store.
    const store = uploadBuffer(
      device,
      "bench:history",
      Uint32Array.from({ length: 2 * seqs }, (_, i) => (i * 7 + 3) % vocab),
    );
    const sampler = new Sampler(device, seqs, vocab, { history: store });
    const logits = uploadBuffer(
      device,
      "bench:logits",
      Float32Array.from(
        Array.from({ length: seqs }, (_, s) => Array.from(row(vocab, s + 1))).flat(),
      ),
    );
    const owned: KernelDispatch[] = [];
    const kernel = async (spec: Parameters<typeof prepareKernel>[1]) => {
      const d = await prepareKernel(device, spec);
      owned.push(d);
      return d;
    };
    const hist = [seqs, vocab, 0, 0];
    const history = [
      await kernel({
        label: "bench:clear_counts",
        shader: "sampling_history",
        entry: "clear_counts",
        uniform: hist,
        buffers: { 3: sampler.counts },
        workgroups: grid256(device, seqs * vocab),
      }),
      await kernel({
        label: "bench:count_history",
        shader: "sampling_history",
        entry: "count_history",
        uniform: hist,
        buffers: { 1: store, 2: sampler.ranges, 3: sampler.counts },
        workgroups: [seqs],
      }),
    ];
    const buffers = {
      1: logits,
      2: sampler.params,
      3: sampler.counts,
      4: sampler.masks,
      5: sampler.work,
      6: sampler.result,
      7: sampler.top,
    };
    const spec = {
      label: "bench:sampling_radix",
      shader: "sampling",
      entry: "sample",
      uniform: [seqs, vocab, sampler.words, 0],
      buffers,
      workgroups: [seqs] as const,
    };
    const radix = await kernel(spec);
    const bisection: Dispatch = {
      ...radix,
      label: "bench:sampling_bisection",
      pipeline: oldPipeline,
      bindGroup: device.createBindGroup({
        label: "bench:sampling_bisection",
        layout: oldPipeline.getBindGroupLayout(0),
        entries: [
          { binding: 0, resource: { buffer: radix.uniform } },
          ...Object.entries(buffers).map(([b, buffer]) => ({
            binding: Number(b),
            resource: { buffer },
          })),
        ],
      }),
    };
    for (const [name, params] of Object.entries(configs)) {
      const batch: SeqSampling[] = Array.from({ length: seqs }, (_, s) => ({
        ...params,
        history: { tokens: [], outputStart: 0 },
        historyAt: { start: 2 * s, outputStart: 2 * s + 1, end: 2 * s + 2 },
        u: (s + 0.5) / seqs,
      }));
      sampler.write(batch);
      const run = async (sample: Dispatch) => {
        const t0 = performance.now(); // one step, to size the timed submits (~0.3 s each)
        const enc = device.createCommandEncoder({ label: "bench:probe" });
        encodeDispatches(enc, [...history, sample], "bench:probe");
        device.queue.submit([enc.finish()]);
        await device.queue.onSubmittedWorkDone();
        const once = (performance.now() - t0) / 1000;
        const iters = Math.max(minIters, Math.min(50, Math.ceil(0.3 / once)));
        const seconds = await time([...history, sample], iters);
        const tokens = new Uint32Array(await readBuffer(device, sampler.result, seqs * 8));
        return { seconds, iters, tokens: tokens.filter((_, i) => i % 2 === 0) };
      };
      const old = await run(bisection);
      const now = await run(radix);
      const same = old.tokens.filter((t, i) => t === now.tokens[i]).length;
      const result = {
        vocab,
        seqs,
        config: name,
        bisection_ms_per_step: old.seconds * 1e3,
        radix_ms_per_step: now.seconds * 1e3,
        speedup: old.seconds / now.seconds,
        iterations: { bisection: old.iters, radix: now.iters },
        same_tokens: `${same}/${seqs}`,
      };
      results.push(result);
      console.error(
        `V=${vocab} seqs=${seqs} ${name}: bisection ${
          result.bisection_ms_per_step.toFixed(2)
        } ms, ` +
          `radix ${result.radix_ms_per_step.toFixed(2)} ms, x${result.speedup.toFixed(2)}, ` +
          `same tokens ${same}/${seqs}`,
      );
    }
    for (const d of owned) d.uniform.destroy();
    logits.destroy();
    sampler.destroy();
    store.destroy();
  }
}

const report = {
  bench: "sampler",
  adapter: caps.adapter,
  date: new Date().toISOString(),
  timer: "wall: one submit of N steps / N, best of three after a warm-up",
  step: "clear_counts + count_history + sample (one workgroup per sequence)",
  baseline: {
    kernel: `${BASELINES.sampling.tag}:${BASELINES.sampling.path}, bisection thresholds`,
  },
  results,
};
console.log(JSON.stringify(report, null, 2));
await Deno.writeTextFile(outPath, JSON.stringify(report, null, 2) + "\n");
