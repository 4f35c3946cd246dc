/**
 * Float products (F16, F32 weights) through the product kernel family, where float types are
 * formats like the GGUF blocks (`prepareLinear`: `matvec_quant.wgsl` up to the kernel paths'
 * `gemmAboveRows` rows, `gemm_quant.wgsl` above), against the float matrix-vector kernel they
 * replaced (`matvec.wgsl` read from git by `baseline.ts`, which took every row count on a CPU adapter, 8 rows
 * per z-slice), side by side on one adapter, at SmolLM2-135M's MLP shapes (1536 × 576 and
 * 576 × 1536). The baseline runs with the settings its paths gave it (one thread per row and 8
 * rows per thread on a CPU adapter; 64 threads per row on a GPU). Best of ROUNDS passes of ITERS
 * dispatches, the two interleaved; prints (and with --out writes) JSON with ms per product, the
 * ratio (baseline time over family time: > 1, the family is faster) and the largest difference
 * between their outputs. Chart: `deno run -A bench/chart.ts OUT.json OUT.svg`.
 *
 *   deno run -A bench/kernels/float_products.ts [--rows 1,8,64,256] [--rounds R] [--iters N] [--out F]
 */
import { acquireGpu } from "../../src/gpu/device.ts";
import { readF32, storageBuffer, uploadBuffer } from "../../src/gpu/buffers.ts";
import { DTYPE_CODE, encodeWeights, type WeightDtype } from "../../src/gpu/dtype.ts";
import type { Dispatch } from "../../src/gpu/dispatch.ts";
import { prepareLinear } from "../../src/gpu/product/product.ts";
import { kernelPaths } from "../../src/gpu/paths.ts";
import { baselineDispatch } from "./baseline.ts";
import { dispatchTimer } from "../lib/timer.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";

const SHAPES: [number, number][] = [[1536, 576], [576, 1536]];
const DTYPES: WeightDtype[] = ["f16", "f32"];

const { flags } = runCli({
  name: "float_products",
  command: "deno run -A bench/kernels/float_products.ts",
  about: "Float products through the product kernel family against the replaced float " +
    "matrix-vector kernel, at SmolLM2-135M's MLP shapes; prints JSON.",
  flags: {
    rows: { type: "list", default: ["1", "8", "64", "256"], help: "activation row counts" },
    iters: { type: "integer", min: 1, default: 3, help: "dispatches per timed pass" },
    rounds: { type: "integer", min: 1, default: 2, help: "timed passes (the best is kept)" },
    out: { type: "string", arg: "FILE", help: "also write the JSON report here" },
  },
});
const rows = flags.rows.map(Number);
if (!rows.every((m) => Number.isInteger(m) && m >= 1)) throw new Error("--rows: integers >= 1");

const { device, caps } = await acquireGpu({ label: "bench-float-products" });
const timer = dispatchTimer(device, caps.timestamps);
const cpu = kernelPaths(device).kind === "cpu";

/** The replaced kernel as its paths ran it: one thread per row (8 rows each) or 64 per row. */
function baseline(
  w: GPUBuffer,
  x: GPUBuffer,
  y: GPUBuffer,
  dtype: WeightDtype,
  m: number,
  n: number,
  k: number,
) {
  const [tpr, wg, rpt] = cpu ? [1, 64, 8] : [64, 256, 1];
  return baselineDispatch(device, "matvec", "main", {
    constants: {
      WEIGHT_DTYPE: DTYPE_CODE[dtype],
      ROWS: Math.min(m, 8),
      TPR: tpr,
      WG: wg,
      RPT: rpt,
    },
    uniform: new Uint32Array([m, n, k, 0, n, 0, 0, 0]).buffer,
    buffers: {
      1: x,
      2: w,
      3: storageBuffer(device, "bench:unused", 16),
      4: y,
      5: storageBuffer(device, "bench:unused", 16),
    },
    workgroups: [Math.ceil(n / ((wg / tpr) * rpt)), 1, Math.ceil(m / 8)],
  });
}

async function best(d: Dispatch): Promise<number> {
  let t = Infinity;
  for (let r = 0; r < flags.rounds; r++) t = Math.min(t, await timer.time(d, flags.iters));
  return t;
}

const results: Record<string, unknown>[] = [];
for (const dtype of DTYPES) {
  for (const [n, k] of SHAPES) {
    const wv = new Float32Array(n * k).map((_, i) => ((i * 2654435761) % 1000) / 1000 - 0.5);
    const w = uploadBuffer(device, "bench:w", encodeWeights(wv, dtype));
    for (const m of rows) {
      const xv = new Float32Array(m * k).map((_, i) => ((i * 40503) % 997) / 997 - 0.5);
      const x = uploadBuffer(device, "bench:x", xv);
      const yOld = storageBuffer(device, "bench:y-old", m * n * 4);
      const yNew = storageBuffer(device, "bench:y-new", m * n * 4);
      const old = await baseline(w, x, yOld, dtype, m, n, k);
      const family = await prepareLinear(
        device,
        { x, w, y: yNew, m, n, k, type: dtype },
        "bench:family",
      );
      let [tOld, tNew] = [Infinity, Infinity];
      for (let r = 0; r < flags.rounds; r++) {
        tOld = Math.min(tOld, await best(old));
        tNew = Math.min(tNew, await best(family));
      }
      const [a, b] = [await readF32(device, yOld, m * n), await readF32(device, yNew, m * n)];
      let diff = 0;
      for (let i = 0; i < m * n; i++) diff = Math.max(diff, Math.abs(a[i]! - b[i]!));
      if (!(diff < 1e-2)) throw new Error(`${dtype} ${n}x${k} m=${m}: outputs differ by ${diff}`);
      const kernel = family.pipeline.label.split(":").slice(1, 4).join(":");
      results.push({
        dtype,
        n,
        k,
        m,
        family_kernel: kernel,
        family_ms: tNew * 1e3,
        baseline_ms: tOld * 1e3,
        speedup: tOld / tNew,
        max_abs_diff: diff,
      });
      console.error(
        `${dtype} ${n}x${k} m=${m}: family (${kernel}) ${(tNew * 1e3).toFixed(2)} ms, ` +
          `old matvec ${(tOld * 1e3).toFixed(2)} ms, x${(tOld / tNew).toFixed(2)}`,
      );
      [x, yOld, yNew, family.uniform].forEach((buf) => buf.destroy());
    }
    w.destroy();
  }
}

const report = {
  bench: "float-products",
  adapter: caps.adapter,
  date: new Date().toISOString(),
  timer: timer.kind,
  iters: flags.iters,
  rounds: flags.rounds,
  note: "family: prepareLinear (F16/F32 as formats of matvec_quant / gemm_quant, the kernel " +
    "paths' choice per row count); baseline: the replaced matvec.wgsl with the settings its " +
    "paths gave it. speedup = baseline time / family time.",
  results,
};
console.log(JSON.stringify(report, null, 2));
if (flags.out) await Deno.writeTextFile(flags.out, JSON.stringify(report, null, 2) + "\n");
