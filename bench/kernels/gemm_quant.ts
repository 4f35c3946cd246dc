/**
 * Prefill products over GGUF block-quantized weights: the tiled GEMM (`prepareTiledGemm`, each
 * weight decoded once per tile of activation rows) against the matrix-vector kernel
 * (`prepareMatvec`, 8 activation rows per z-slice, the weights decoded again for each), on
 * one adapter, at SmolLM2-135M's MLP shapes n × k: 1536 × 576 (gate or up) and 576 × 1536
 * (down); the K-quants take k = 512 where SmolLM2 has 576 (not whole 256-blocks). Each pass is
 * ITERS dispatches in one submit, timed by timestamp queries when the device has them (else the
 * wall clock) and by this process's CPU time (on a CPU adapter such as lavapipe the kernels run
 * on this process's threads, so CPU time is the work done, less disturbed by other load on a
 * shared machine); the best of ROUNDS passes, both kernels interleaved pass by pass. Prints (and
 * with --out writes) JSON: ms per product of each, their ratio (matvec time over GEMM time: > 1,
 * the GEMM is faster) and the largest difference between their outputs.
 *
 *   deno run -A bench/kernels/gemm_quant.ts [--types Q8_0,Q4_K] [--rows 16,32,64,512] [--rounds R]
 *     [--iters N] [--sweep] [--out bench/results/gemm-quant-lavapipe.json]
 *
 * --sweep also times other tiles (how `GEMM_CPU_TILE` was chosen); --rows with small
 * counts finds where the GEMM starts to win (`gemmMinRows`).
 */
import process from "node:process";
import { acquireGpu } from "../../src/gpu/device.ts";
import { readBuffer, readF32, storageBuffer, uploadBuffer } from "../../src/gpu/buffers.ts";
import type { Dispatch } from "../../src/gpu/dispatch.ts";
import { prepareMatvec } from "../../src/gpu/product/matvec.ts";
import { type GemmTile, prepareTiledGemm } from "../../src/gpu/product/gemm.ts";
import { QUANT_FORMATS, QUANT_TYPES, type QuantType } from "../../src/gpu/formats/registry.ts";
import { loadQuantTables } from "../../src/gpu/formats/tables.ts";
import { randomBlocks } from "../../src/gpu/formats/random_blocks.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";

const { flags } = runCli({
  name: "gemm_quant",
  command: "deno run -A bench/kernels/gemm_quant.ts",
  about: "Prefill products over quantized weights, the tiled GEMM against the 8-row " +
    "matrix-vector slices, at SmolLM2-135M's MLP shapes; prints JSON.",
  flags: {
    types: {
      type: "list",
      choices: QUANT_TYPES,
      default: ["Q8_0", "Q4_K", "Q6_K", "Q4_0"],
      help: "the block formats",
    },
    rows: { type: "integers", min: 1, default: [512], help: "activation rows (prompt tokens)" },
    iters: { type: "integer", min: 1, default: 2, help: "dispatches per timed pass" },
    rounds: { type: "integer", min: 1, default: 4, help: "timed passes (the best is kept)" },
    sweep: { type: "boolean", help: "also time other CPU-adapter tiles on the first shape" },
    out: { type: "string", arg: "FILE", help: "also write the JSON report here" },
  },
});
const types: QuantType[] = flags.types;
const ROWS: readonly number[] = flags.rows;
const ITERS = flags.iters;
const ROUNDS = flags.rounds;

/** [n, k] wanted; `kFor` fits k to the format's blocks. */
const SHAPES: [number, number][] = [[1536, 576], [576, 1536]];
const kFor = (type: QuantType, k: number) => k - (k % QUANT_FORMATS[type].blockSize);

const SWEEP: GemmTile[] = [
  { kind: "rows", threads: 16, rpt: 4, rb: 32 },
  { kind: "rows", threads: 16, rpt: 8, rb: 32 },
  { kind: "rows", threads: 8, rpt: 8, rb: 32 },
  { kind: "rows", threads: 32, rpt: 8, rb: 32 },
  { kind: "rows", threads: 16, rpt: 8, rb: 16 },
  { kind: "rows", threads: 16, rpt: 6, rb: 32 },
  { kind: "staged", wgN: 1, wgM: 64, tn: 16, tm: 1, bk: 256, pad: 0 },
];

const { device, caps } = await acquireGpu({ label: "bench-gemm-quant" });
await loadQuantTables(types);

const query = caps.timestamps
  ? device.createQuerySet({ label: "bench-gemm-quant:ts", type: "timestamp", count: 2 })
  : undefined;
const resolve = storageBuffer(device, "bench-gemm-quant:ts-resolve", 16);
const qbuf = query &&
  device.createBuffer({
    label: "bench-gemm-quant:ts-buf",
    size: 16,
    usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
  });

/** Seconds per dispatch: by timestamps (else wall clock), and CPU seconds of this process. */
interface Timing {
  s: number;
  cpu: number;
}

/** One pass of `iters` dispatches of `d`. */
async function pass(d: Dispatch, iters = ITERS): Promise<Timing> {
  const enc = device.createCommandEncoder({ label: "bench-gemm-quant" });
  const p = enc.beginComputePass(
    query
      ? {
        label: "bench-gemm-quant",
        timestampWrites: { querySet: query, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 },
      }
      : { label: "bench-gemm-quant" },
  );
  p.setPipeline(d.pipeline);
  p.setBindGroup(0, d.bindGroup);
  const [gx, gy = 1, gz = 1] = d.workgroups;
  for (let i = 0; i < iters; i++) p.dispatchWorkgroups(gx, gy, gz);
  p.end();
  if (query && qbuf) {
    enc.resolveQuerySet(query, 0, 2, qbuf, 0);
    enc.copyBufferToBuffer(qbuf, 0, resolve, 0, 16);
  }
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  device.queue.submit([enc.finish()]);
  await device.queue.onSubmittedWorkDone();
  const wall = (performance.now() - t0) / 1000;
  const used = process.cpuUsage(cpu0);
  const cpu = (used.user + used.system) / 1e6 / iters;
  if (!query) return { s: wall / iters, cpu };
  const ts = new BigUint64Array(await readBuffer(device, resolve, 16));
  return { s: Number(ts[1]! - ts[0]!) / 1e9 / iters, cpu };
}

/** The best of ROUNDS passes of each dispatch, interleaved pass by pass, after one warm-up. */
async function timeAll(ds: readonly Dispatch[]): Promise<Timing[]> {
  for (const d of ds) await pass(d, 1);
  const best = ds.map(() => ({ s: Infinity, cpu: Infinity }));
  for (let r = 0; r < ROUNDS; r++) {
    for (const [i, d] of ds.entries()) {
      const t = await pass(d);
      best[i] = { s: Math.min(best[i]!.s, t.s), cpu: Math.min(best[i]!.cpu, t.cpu) };
    }
  }
  return best;
}

/** Largest |a - b| between the two kernels' outputs. */
async function maxDiff(a: GPUBuffer, b: GPUBuffer, count: number): Promise<number> {
  const [x, y] = [await readF32(device, a, count), await readF32(device, b, count)];
  let worst = 0;
  for (let i = 0; i < count; i++) worst = Math.max(worst, Math.abs(x[i]! - y[i]!));
  return worst;
}

const f = (v: number) => v.toFixed(2);
const results: Record<string, unknown>[] = [];
for (const type of types) {
  for (const [n, k0] of SHAPES) {
    const k = kFor(type, k0);
    const w = uploadBuffer(device, "bench-gemm-quant:w", randomBlocks(type, n * k, n + k));
    for (const m of ROWS) {
      const xv = new Float32Array(m * k).map((_, i) => ((i * 40503) % 997) / 997 - 0.5);
      const x = uploadBuffer(device, "bench-gemm-quant:x", xv);
      const yGemm = storageBuffer(device, "bench-gemm-quant:y-gemm", m * n * 4);
      const yMatvec = storageBuffer(device, "bench-gemm-quant:y-matvec", m * n * 4);
      const args = { x, w, m, n, k, type };
      const gemmD = await prepareTiledGemm(device, { ...args, y: yGemm }, "bench:gemm_quant");
      const matvecD = await prepareMatvec(device, { ...args, y: yMatvec }, "bench:matvec");
      const tiles = flags.sweep ? SWEEP : [];
      const sweepDs = await Promise.all(
        tiles.map((tile) =>
          prepareTiledGemm(device, { ...args, y: yGemm, tile }, "bench:gemm_quant:sweep")
        ),
      );
      const [gemm, matvec, ...swept] = await timeAll([gemmD, matvecD, ...sweepDs]);
      if (!gemm || !matvec) throw new Error("no timings");
      await pass(gemmD, 1); // the sweep wrote yGemm last
      const diff = await maxDiff(yGemm, yMatvec, m * n);
      if (!(diff < 1e-3)) throw new Error(`${type} ${n}x${k} m=${m}: outputs differ by ${diff}`);
      const row: Record<string, unknown> = {
        type,
        n,
        k,
        m,
        gemm_ms: gemm.s * 1e3,
        matvec_ms: matvec.s * 1e3,
        speedup: matvec.s / gemm.s,
        gemm_cpu_ms: gemm.cpu * 1e3,
        matvec_cpu_ms: matvec.cpu * 1e3,
        speedup_cpu: matvec.cpu / gemm.cpu,
        max_abs_diff: diff,
      };
      console.error(
        `${type} ${n}x${k} m=${m}: gemm ${f(gemm.s * 1e3)} ms, matvec ${f(matvec.s * 1e3)} ms, ` +
          `x${f(matvec.s / gemm.s)} (CPU time x${f(matvec.cpu / gemm.cpu)}; ` +
          `max |diff| ${diff.toExponential(1)})`,
      );
      if (tiles.length > 0) {
        row.sweep = tiles.map((tile, i) => {
          const t = swept[i]!;
          console.error(`  ${JSON.stringify(tile)}: ${f(t.s * 1e3)} ms, ${f(t.cpu * 1e3)} CPU-ms`);
          return { tile, ms: t.s * 1e3, cpu_ms: t.cpu * 1e3 };
        });
      }
      results.push(row);
      [x, yGemm, yMatvec].forEach((b) => b.destroy());
    }
    w.destroy();
  }
}

const report = {
  bench: "gemm-quant",
  adapter: caps.adapter,
  date: new Date().toISOString(),
  timer: query ? "timestamp" : "wall",
  iters: ITERS,
  rounds: ROUNDS,
  note: "gemm: prepareTiledGemm's default tile for this adapter; matvec: prepareMatvec " +
    "(8 activation rows per z-slice, its default threads). speedup = matvec time / gemm time " +
    "(best of the rounds); speedup_cpu the same by this process's CPU time. K-quants use " +
    "k = 512 for SmolLM2's k = 576.",
  results,
};
console.log(JSON.stringify(report, null, 2));
if (flags.out) await Deno.writeTextFile(flags.out, JSON.stringify(report, null, 2) + "\n");
