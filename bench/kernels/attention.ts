/**
 * Decode attention, old against new in one run on one adapter. Old: RoPE on q, RoPE on k, the
 * f32 KV write and the per-(token, query head) attention kernel (`baseline.ts`:
 * the kernel before the GQA rewrite, read from git). New: one fused rope_kv dispatch and the GQA-aware kernel,
 * over an f32 and an f16 cache. Times attention alone and the whole step (rope + kv + attention),
 * single-pass and split along the keys: wall and CPU time per step over many steps in one submit.
 *
 *   deno run -A bench/kernels/attention.ts [--small] [--out bench/results/attention-lavapipe.json]
 */
import process from "node:process";
import { acquireGpu } from "../../src/gpu/device.ts";
import { storageBuffer, uploadBuffer } from "../../src/gpu/buffers.ts";
import { type Dispatch, encodeDispatches } from "../../src/gpu/dispatch.ts";
import { baselineDispatch } from "./baseline.ts";
import { prepareRope } from "../../src/gpu/kernels/dense.ts";
import { uploadRopeFrequencies } from "../../src/gpu/kernels/rope_frequencies.ts";
import {
  chooseSplits,
  kvBytesPerElement,
  type KvDtype,
  prepareAttention,
  prepareKvWrite,
  prepareRopeKv,
} from "../../src/gpu/kernels/attention.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";

const { flags } = runCli({
  name: "attention",
  command: "deno run -A bench/kernels/attention.ts",
  about: "Decode attention, the kernel before the GQA rewrite against the current one, on one " +
    "adapter; prints JSON.",
  flags: {
    small: { type: "boolean", help: "one context and batch, short passes (CPU adapters)" },
    out: { type: "string", arg: "FILE", help: "also write the JSON report here" },
  },
});
const small = flags.small;
const outPath = flags.out;
const HEADS = 9, KV_HEADS = 3, HEAD_DIM = 64, BLOCK = 16; // SmolLM2-135M
const contexts = small ? [256] : [256, 2048];
const batches = small ? [1] : [1, 8];
/** Wall seconds one timed pass should take (iterations are sized to it). */
const PASS_S = small ? 0.1 : 0.5;

const { device, caps } = await acquireGpu({ label: "bench-attention" });
const wordsOf = (values: ArrayLike<number>) => Float32Array.from(values);
const ramp = (n: number, seed: number) =>
  wordsOf(Array.from({ length: n }, (_, i) => (((i * 2654435761 + seed) % 1000) / 1000 - 0.5)));

/** The baseline kernel's dispatches (same bindings as before the rewrite). */
async function baselineAttention(
  b: Record<number, GPUBuffer>,
  tokens: number,
  splits: number,
): Promise<Dispatch[]> {
  const words = new ArrayBuffer(32);
  new Uint32Array(words).set([tokens, HEADS, KV_HEADS, HEAD_DIM, BLOCK, splits]);
  new Float32Array(words)[6] = 1 / Math.sqrt(HEAD_DIM);
  const make = (entry: string, bindings: number[], workgroups: Dispatch["workgroups"]) =>
    baselineDispatch(device, "attention", entry, {
      uniform: words,
      buffers: Object.fromEntries(bindings.map((i) => [i, b[i]!])),
      workgroups,
    });
  if (splits === 1) return [await make("single", [1, 2, 3, 4, 5, 6, 7], [tokens, HEADS])];
  return [
    await make("split", [1, 2, 3, 4, 5, 6, 8, 9], [tokens, HEADS, splits]),
    await make("merge", [7, 8, 9], [tokens, HEADS]),
  ];
}

/**
 * Seconds per repetition of `ds`, best of five passes of `iters` repetitions in one submit: wall
 * time, and this process's CPU time (lavapipe runs in-process, so that is the work done, less
 * disturbed by other load on the machine than the wall clock).
 */
async function time(ds: Dispatch[]): Promise<{ wall: number; cpu: number }> {
  const pass = async (iters: number) => {
    const enc = device.createCommandEncoder({ label: "bench:attention" });
    encodeDispatches(enc, Array.from({ length: iters }, () => ds).flat(), "bench:attention");
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    const c = process.cpuUsage(c0);
    return {
      wall: (performance.now() - t0) / 1000 / iters,
      cpu: (c.user + c.system) / 1e6 / iters,
    };
  };
  await pass(1); // warm up (lavapipe compiles on first use)
  const iters = Math.max(2, Math.min(200, Math.round(PASS_S / (await pass(1)).wall)));
  const best = { wall: Infinity, cpu: Infinity };
  for (let i = 0; i < 5; i++) {
    const t = await pass(iters);
    best.wall = Math.min(best.wall, t.wall);
    best.cpu = Math.min(best.cpu, t.cpu);
  }
  return best;
}

const results: Record<string, unknown>[] = [];
for (const ctx of contexts) {
  for (const batch of batches) {
    const blocksPer = Math.ceil((ctx + 1) / BLOCK);
    const blocks = batch * blocksPer;
    const row = KV_HEADS * HEAD_DIM, qCols = HEADS * HEAD_DIM;
    const table = Array.from({ length: blocks }, (_, i) => i);
    const positions = Array.from({ length: batch }, () => ctx - 1);
    const offsets = Array.from({ length: batch }, (_, s) => s * blocksPer);
    const slots = offsets.map((o) => o * BLOCK + ctx - 1);
    const buf = {
      positions: uploadBuffer(device, "bench:pos", Uint32Array.from(positions)),
      offsets: uploadBuffer(device, "bench:off", Uint32Array.from(offsets)),
      table: uploadBuffer(device, "bench:table", Uint32Array.from(table)),
      slots: uploadBuffer(device, "bench:slots", Uint32Array.from(slots)),
      frequencies: uploadRopeFrequencies(
        device,
        "bench:rope_frequencies",
        Array.from({ length: HEAD_DIM / 2 }, (_, i) => 1e4 ** (-(2 * i) / HEAD_DIM)),
      ),
      q: uploadBuffer(device, "bench:q", ramp(batch * qCols, 1)),
      k: uploadBuffer(device, "bench:k", ramp(batch * row, 2)),
      v: uploadBuffer(device, "bench:v", ramp(batch * row, 3)),
      qkv: uploadBuffer(device, "bench:qkv", ramp(batch * (qCols + 2 * row), 4)),
      out: storageBuffer(device, "bench:out", batch * qCols * 4),
    };
    const cacheOf = (dtype: KvDtype, name: string) =>
      uploadBuffer(
        device,
        `bench:${name}_cache`,
        new Uint8Array(ramp(blocks * BLOCK * row * kvBytesPerElement(dtype) / 4, 5).buffer),
      );
    const kC = cacheOf("f32", "k"), vC = cacheOf("f32", "v");
    const ropeQ = await prepareRope(device, {
      x: buf.q,
      positions: buf.positions,
      frequencies: buf.frequencies,
      tokens: batch,
      heads: HEADS,
      headDim: HEAD_DIM,
    }, "bench:rope_q");
    const ropeK = await prepareRope(device, {
      x: buf.k,
      positions: buf.positions,
      frequencies: buf.frequencies,
      tokens: batch,
      heads: KV_HEADS,
      headDim: HEAD_DIM,
    }, "bench:rope_k");
    const kvWrite = await prepareKvWrite(device, {
      k: buf.k,
      v: buf.v,
      slots: buf.slots,
      kCache: kC,
      vCache: vC,
      tokens: batch,
      kvHeads: KV_HEADS,
      headDim: HEAD_DIM,
    }, "bench:kv_write");
    for (const splits of [...new Set([1, chooseSplits(ctx)])]) {
      const parts = batch * HEADS * splits;
      const base = await baselineAttention(
        {
          1: buf.q,
          2: kC,
          3: vC,
          4: buf.positions,
          5: buf.offsets,
          6: buf.table,
          7: buf.out,
          8: storageBuffer(device, "bench:ml", parts * 8),
          9: storageBuffer(device, "bench:acc", parts * HEAD_DIM * 4),
        },
        batch,
        splits,
      );
      const row0 = { context: ctx, batch, splits };
      const oldAttn = await time(base);
      const oldStep = await time([ropeQ, ropeK, kvWrite, ...base]);
      results.push({
        ...row0,
        kernel: "old",
        kv_dtype: "f32",
        dispatches: 3 + base.length,
        attention_wall_ms: oldAttn.wall * 1e3,
        attention_cpu_ms: oldAttn.cpu * 1e3,
        step_wall_ms: oldStep.wall * 1e3,
        step_cpu_ms: oldStep.cpu * 1e3,
      });
      for (const kvDtype of ["f32", "f16"] as const) {
        const kCache = kvDtype === "f32" ? kC : cacheOf(kvDtype, "k");
        const vCache = kvDtype === "f32" ? vC : cacheOf(kvDtype, "v");
        const rk = await prepareRopeKv(device, {
          qkv: buf.qkv,
          q: buf.q,
          positions: buf.positions,
          frequencies: buf.frequencies,
          slots: buf.slots,
          kCache,
          vCache,
          tokens: batch,
          heads: HEADS,
          kvHeads: KV_HEADS,
          headDim: HEAD_DIM,
          kvDtype,
        }, "bench:rope_kv");
        const att = await prepareAttention(device, {
          q: buf.q,
          kCache,
          vCache,
          positions: buf.positions,
          tableOffsets: buf.offsets,
          blockTable: buf.table,
          out: buf.out,
          tokens: batch,
          heads: HEADS,
          kvHeads: KV_HEADS,
          headDim: HEAD_DIM,
          blockSize: BLOCK,
          splits,
          kvDtype,
        }, "bench:attention");
        const attn = await time(att.dispatches);
        const step = await time([rk, ...att.dispatches]);
        results.push({
          ...row0,
          kernel: "new",
          kv_dtype: kvDtype,
          dispatches: 1 + att.dispatches.length,
          attention_wall_ms: attn.wall * 1e3,
          attention_cpu_ms: attn.cpu * 1e3,
          step_wall_ms: step.wall * 1e3,
          step_cpu_ms: step.cpu * 1e3,
          attention_speedup_wall: oldAttn.wall / attn.wall,
          attention_speedup_cpu: oldAttn.cpu / attn.cpu,
          step_speedup_wall: oldStep.wall / step.wall,
          step_speedup_cpu: oldStep.cpu / step.cpu,
        });
      }
      for (const r of results.slice(-3)) console.error(JSON.stringify(r));
    }
  }
}
const report = {
  bench: "attention-decode",
  shape: { heads: HEADS, kv_heads: KV_HEADS, head_dim: HEAD_DIM, block_size: BLOCK },
  adapter: caps.adapter,
  date: new Date().toISOString(),
  timer: "wall and process CPU time per step (many steps in one submit, best of 5 passes)",
  results,
};
console.log(JSON.stringify(report, null, 2));
if (outPath) await Deno.writeTextFile(outPath, JSON.stringify(report, null, 2) + "\n");
