/**
 * Prefill matrix-matrix products: the 16x16 `tiled` entry of the replaced matmul.wgsl (`baseline.ts`,
 * m > 32) against the register-blocked `prepareFloatGemm`, side by side on one adapter, for the
 * linear layers of a SmolLM2-135M-like model (hidden 576, fused qkv 960, fused gate+up 3072,
 * intermediate 1536) with F16 weights at m = 128 and 512 prompt tokens. Timed with timestamp
 * queries when the device has them (else wall time), and by this process's CPU time (on a CPU
 * adapter such as lavapipe the kernels run on this process's threads: CPU time is the work
 * done, less disturbed by other load on a shared machine); the best of ROUNDS passes of ITERS
 * dispatches, the kernels interleaved. Prints (and with --out writes) JSON with GFLOP/s for
 * both, their ratio per shape, and the largest difference between their outputs.
 *
 *   deno run -A bench/kernels/gemm.ts [--out bench/results/gemm-lavapipe.json] [--iters N] [--rounds R]
 *     [--sweep] [--layer NAME] [--m ROWS]
 *
 * --sweep also times other gemm tile shapes (how the default tile was chosen); --layer NAME and
 * --m ROWS keep one layer or one row count.
 */
import process from "node:process";
import { acquireGpu } from "../../src/gpu/device.ts";
import { readBuffer, readF32, storageBuffer, uploadBuffer } from "../../src/gpu/buffers.ts";
import { DTYPE_CODE, encodeWeights, type WeightDtype } from "../../src/gpu/dtype.ts";
import type { Dispatch } from "../../src/gpu/dispatch.ts";
import { baselineDispatch } from "./baseline.ts";
import {
  FLOAT_GEMM_TILE,
  type FloatGemmTile,
  prepareFloatGemm,
} from "../../src/gpu/product/float_gemm.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";

/** [n, k] of the model's linear layers. */
const LAYERS: [string, number, number][] = [
  ["qkv", 960, 576],
  ["o_proj", 576, 576],
  ["gate_up", 3072, 576],
  ["down_proj", 576, 1536],
];
const ROWS = [128, 512];

const { flags } = runCli({
  name: "gemm",
  command: "deno run -A bench/kernels/gemm.ts",
  about: "Prefill matrix-matrix products, the replaced tiled kernel against prepareFloatGemm, at " +
    "SmolLM2-135M's linear layers; prints JSON.",
  flags: {
    out: { type: "string", arg: "FILE", help: "also write the JSON report here" },
    iters: { type: "integer", min: 1, default: 1, help: "dispatches per timed pass" },
    rounds: { type: "integer", min: 1, default: 1, help: "timed passes (the best is kept)" },
    sweep: { type: "boolean", help: "also time other gemm tile shapes" },
    layer: { type: "enum", choices: LAYERS.map(([l]) => l), help: "only this layer" },
    m: { type: "enum", choices: ROWS.map(String), arg: "ROWS", help: "only this row count" },
  },
});
const outPath = flags.out;
const ITERS = flags.iters;
const ROUNDS = flags.rounds;
const sweep = flags.sweep;
const onlyLayer = flags.layer;
const onlyM = flags.m;
const dtype: WeightDtype = "f16";
const SWEEP: FloatGemmTile[] = [
  { wgN: 16, wgM: 16, tm: 4, bk: 16, pad: 1 },
  { wgN: 16, wgM: 16, tm: 4, bk: 32, pad: 0 },
  { wgN: 16, wgM: 8, tm: 4, bk: 16, pad: 1 },
  { wgN: 16, wgM: 4, tm: 8, bk: 32, pad: 1 },
  { wgN: 8, wgM: 8, tm: 8, bk: 32, pad: 1 },
  { wgN: 16, wgM: 1, tm: 8, bk: 32, pad: 1 },
];

const { device, caps } = await acquireGpu({ label: "bench-gemm" });

const query = caps.timestamps
  ? device.createQuerySet({ label: "bench-gemm:ts", type: "timestamp", count: 2 })
  : undefined;
const resolve = storageBuffer(device, "bench-gemm:ts-resolve", 16);
const qbuf = query &&
  device.createBuffer({
    label: "bench-gemm:ts-buf",
    size: 16,
    usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
  });

/** Seconds per dispatch: by timestamps (else wall clock), and CPU seconds of this process. */
interface Timing {
  s: number;
  cpu: number;
}

/** One pass of ITERS dispatches of `d` (`wg` overrides the workgroup count: a warm-up). */
async function pass(d: Dispatch, wg?: readonly [number, number]): Promise<Timing> {
  const enc = device.createCommandEncoder({ label: "bench-gemm" });
  const p = enc.beginComputePass(
    query
      ? {
        label: "bench-gemm",
        timestampWrites: { querySet: query, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 },
      }
      : { label: "bench-gemm" },
  );
  p.setPipeline(d.pipeline);
  p.setBindGroup(0, d.bindGroup);
  const [gx, gy = 1, gz = 1] = wg ?? d.workgroups;
  for (let i = 0; i < ITERS; i++) p.dispatchWorkgroups(gx, gy, gz);
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
  const cpu = (used.user + used.system) / 1e6 / ITERS;
  if (!query) return { s: wall / ITERS, cpu };
  const ts = new BigUint64Array(await readBuffer(device, resolve, 16));
  return { s: Number(ts[1]! - ts[0]!) / 1e9 / ITERS, cpu };
}

/**
 * The best of ROUNDS passes for each dispatch, the dispatches interleaved pass by pass so that
 * load from other processes on a shared machine falls on all of them alike.
 */
async function timeAll(ds: readonly Dispatch[]): Promise<Timing[]> {
  for (const d of ds) await pass(d, [1, 1]); // first-use costs, on one workgroup
  const best = ds.map(() => ({ s: Infinity, cpu: Infinity }));
  for (let r = 0; r < ROUNDS; r++) {
    for (const [i, d] of ds.entries()) {
      const t = await pass(d);
      best[i] = { s: Math.min(best[i]!.s, t.s), cpu: Math.min(best[i]!.cpu, t.cpu) };
    }
  }
  return best;
}

/** Largest |a - b| between two runs' outputs (both kernels must agree). */
async function maxDiff(a: GPUBuffer, b: GPUBuffer, count: number): Promise<number> {
  const [x, y] = [await readF32(device, a, count), await readF32(device, b, count)];
  let worst = 0;
  for (let i = 0; i < count; i++) worst = Math.max(worst, Math.abs(x[i]! - y[i]!));
  return worst;
}

const results: Record<string, unknown>[] = [];
for (const [layer, n, k] of LAYERS.filter(([l]) => onlyLayer === undefined || l === onlyLayer)) {
  const wv = new Float32Array(n * k).map((_, i) => ((i * 2654435761) % 1000) / 1000 - 0.5);
  const w = uploadBuffer(device, "bench-gemm:w", encodeWeights(wv, dtype));
  for (const m of ROWS.filter((r) => onlyM === undefined || r === Number(onlyM))) {
    const xv = new Float32Array(m * k).map((_, i) => ((i * 40503) % 997) / 997 - 0.5);
    const x = uploadBuffer(device, "bench-gemm:x", xv);
    const yTiled = storageBuffer(device, "bench-gemm:y-tiled", m * n * 4);
    const yGemm = storageBuffer(device, "bench-gemm:y-gemm", m * n * 4);
    const tiledD = await baselineDispatch(device, "matmul", "tiled", {
      constants: { WEIGHT_DTYPE: DTYPE_CODE[dtype], HAS_BIAS: 0 },
      uniform: new Uint32Array([m, n, k, 0]).buffer,
      buffers: { 1: x, 2: w, 3: storageBuffer(device, "bench-gemm:no-bias", 16), 4: yTiled },
      workgroups: [Math.ceil(n / 16), Math.ceil(m / 16)],
    });
    const gemmD = await prepareFloatGemm(
      device,
      { x, w, y: yGemm, m, n, k, dtype },
      "bench-gemm:gemm",
    );
    const tiles = sweep ? SWEEP : [];
    const sweepDs = await Promise.all(
      tiles.map((tile) =>
        prepareFloatGemm(device, { x, w, y: yGemm, m, n, k, dtype, tile }, "bench-gemm:sweep")
      ),
    );
    const [tiled, gemm, ...swept] = await timeAll([tiledD, gemmD, ...sweepDs]);
    if (!tiled || !gemm) throw new Error("no timings");
    // The sweep wrote yGemm last: run the default once more before comparing outputs.
    await pass(gemmD);
    const diff = await maxDiff(yTiled, yGemm, m * n);
    const flop = 2 * m * n * k;
    const row: Record<string, unknown> = {
      layer,
      m,
      n,
      k,
      dtype,
      tiled_ms: tiled.s * 1e3,
      gemm_ms: gemm.s * 1e3,
      tiled_gflop_s: flop / tiled.s / 1e9,
      gemm_gflop_s: flop / gemm.s / 1e9,
      speedup: tiled.s / gemm.s,
      tiled_gflop_per_cpu_s: flop / tiled.cpu / 1e9,
      gemm_gflop_per_cpu_s: flop / gemm.cpu / 1e9,
      speedup_cpu: tiled.cpu / gemm.cpu,
      max_abs_diff: diff,
    };
    const f = (v: number) => v.toFixed(2);
    console.error(
      `${layer} m=${m} n=${n} k=${k}: tiled ${f(tiled.s * 1e3)} ms ${f(flop / tiled.s / 1e9)} ` +
        `GFLOP/s; gemm ${f(gemm.s * 1e3)} ms ${f(flop / gemm.s / 1e9)} GFLOP/s; ` +
        `x${f(tiled.s / gemm.s)} (CPU time x${f(tiled.cpu / gemm.cpu)}; ` +
        `max |diff| ${diff.toExponential(1)})`,
    );
    if (sweep) {
      row.sweep = tiles.map((tile, i) => {
        const t = swept[i]!;
        console.error(
          `  tile ${JSON.stringify(tile)}: ${f(flop / t.s / 1e9)} GFLOP/s, ` +
            `${f(flop / t.cpu / 1e9)} GFLOP/CPU-s`,
        );
        return { ...tile, gflop_s: flop / t.s / 1e9, gflop_per_cpu_s: flop / t.cpu / 1e9 };
      });
      for (const d of sweepDs) d.uniform.destroy();
    }
    results.push(row);
    for (const b of [x, yTiled, yGemm, gemmD.uniform]) b.destroy();
  }
  w.destroy();
}

const geomean = (key: string) =>
  Math.exp(results.reduce((s, r) => s + Math.log(r[key] as number), 0) / results.length);
const report = {
  bench: "gemm-prefill",
  adapter: caps.adapter,
  date: new Date().toISOString(),
  timer: query ? "timestamp" : "wall",
  iterations: ITERS,
  gemm_tile: FLOAT_GEMM_TILE,
  rounds: ROUNDS,
  geomean_speedup: geomean("speedup"),
  geomean_speedup_cpu: geomean("speedup_cpu"),
  results,
};
console.log(JSON.stringify(report, null, 2));
if (outPath) await Deno.writeTextFile(outPath, JSON.stringify(report, null, 2) + "\n");
