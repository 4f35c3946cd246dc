/**
 * Quantized decode matvec vs F16: y = x·Wᵀ for one activation row (and for 8) with W in each
 * GGUF block format (`prepareQuantMatvec`, dequantized in registers) and in F16 (`prepareLinear`)
 * on the same adapter in one run. Shapes: n × k = 1536 × 576 and 49152 × 576 for the 32-element
 * formats; 1536 × 1536 and 49152 × 512 for the K-quants (576 is not whole 256-blocks). Timed on
 * the GPU with timestamp queries when the device has them, else wall time over a few dispatches
 * in one submit. Prints JSON: bytes per weight, µs per matvec, weight GB/s, and the ratio of the
 * F16 time to the quantized time (> 1: the quantized kernel is faster).
 *
 *   deno run -A bench/quant.ts [--small] [--out bench/results/quant-lavapipe.json]
 */
import { dispatchTimer } from "./timer.ts";
import { acquireGpu } from "../src/gpu/device.ts";
import { readF32, storageBuffer, uploadBuffer } from "../src/gpu/buffers.ts";
import { encodeWeights } from "../src/gpu/dtype.ts";
import { prepareLinear } from "../src/gpu/kernels/linear.ts";
import { prepareQuantMatvec } from "../src/gpu/kernels/matvec_quant.ts";
import { QUANT_FORMATS, QUANT_TYPES, type QuantType } from "../src/gpu/quant/formats.ts";
import { randomBlocks } from "../src/gpu/quant/random_blocks.ts";

const small = Deno.args.includes("--small");
const outIdx = Deno.args.indexOf("--out");
const outPath = outIdx >= 0 ? Deno.args[outIdx + 1] : undefined;
/** Dispatches per timed pass: fewer for the large shape, which takes seconds on lavapipe. */
const iters = (n: number) => small ? 3 : n > 10000 ? 2 : 10;
/** Activation rows: decode (1) everywhere, 8 on the small shape only (lavapipe time). */
const rowsFor = (n: number) => n > 10000 ? [1] : [1, 8];

const shapesFor = (type: QuantType): [number, number][] =>
  QUANT_FORMATS[type].blockSize === 32
    ? (small ? [[1536, 576]] : [[1536, 576], [49152, 576]])
    : (small ? [[1536, 1536]] : [[1536, 1536], [49152, 512]]);

const { device, caps } = await acquireGpu({ label: "bench-quant" });

const timer = dispatchTimer(device, caps.timestamps);

/** F16 weights of `count` elements: pseudo-random values in ±0.5 (content does not matter). */
function f16Weights(count: number): Uint8Array {
  const v = new Float32Array(count);
  for (let i = 0; i < count; i++) v[i] = ((i * 2654435761) % 1000) / 1000 - 0.5;
  return encodeWeights(v, "f16");
}

/** µs per F16 matvec, per "n,k,m", measured once per shape. */
const f16Times = new Map<string, number>();

async function f16Time(n: number, k: number, m: number): Promise<number> {
  const key = `${n},${k},${m}`;
  const known = f16Times.get(key);
  if (known !== undefined) return known;
  const w = uploadBuffer(device, "bench:w16", f16Weights(n * k));
  const x = storageBuffer(device, "bench:x", m * k * 4);
  const y = storageBuffer(device, "bench:y", m * n * 4);
  const d = await prepareLinear(device, { x, w, y, m, n, k, dtype: "f16" }, "bench:f16");
  const t = await timer.time(d, iters(n));
  [w, x, y].forEach((b) => b.destroy());
  f16Times.set(key, t);
  return t;
}

const results: Record<string, unknown>[] = [];
for (const type of QUANT_TYPES) {
  const f = QUANT_FORMATS[type];
  for (const [n, k] of shapesFor(type)) {
    const bytes = randomBlocks(type, n * k, n + k);
    const w = uploadBuffer(device, "bench:wq", bytes);
    for (const m of rowsFor(n)) {
      const x = uploadBuffer(device, "bench:x", new Float32Array(m * k).fill(0.01));
      const y = storageBuffer(device, "bench:y", m * n * 4);
      const d = await prepareQuantMatvec(device, { x, w, y, m, n, k, type }, "bench:quant");
      const t = await timer.time(d, iters(n));
      const yv = await readF32(device, y, m * n);
      if (!yv.every(Number.isFinite)) throw new Error(`${type} ${n}x${k}: non-finite output`);
      const t16 = await f16Time(n, k, m);
      const row = {
        type,
        n,
        k,
        m,
        iterations: iters(n),
        bytes: bytes.byteLength,
        bytes_per_weight: f.blockBytes / f.blockSize,
        us_per_matvec: t * 1e6,
        weight_gb_per_s: bytes.byteLength / t / 1e9,
        f16_bytes: n * k * 2,
        f16_us_per_matvec: t16 * 1e6,
        f16_time_over_quant_time: t16 / t,
      };
      results.push(row);
      console.error(
        `${type} ${n}x${k} m=${m}: ${(t * 1e6).toFixed(0)} us (${
          row.weight_gb_per_s.toFixed(2)
        } GB/s), f16 ${(t16 * 1e6).toFixed(0)} us, f16/quant ${(t16 / t).toFixed(2)}`,
      );
      [x, y].forEach((b) => b.destroy());
    }
    w.destroy();
  }
}

const report = {
  bench: "quant-matvec",
  adapter: caps.adapter,
  date: new Date().toISOString(),
  timer: timer.kind,
  note:
    "m = 8 is one pass over the weights with 8 activation rows; F16 uses prepareLinear (matvec.wgsl, or matvec_subgroups.wgsl where the device has subgroups).",
  results,
};
console.log(JSON.stringify(report, null, 2));
if (outPath) await Deno.writeTextFile(outPath, JSON.stringify(report, null, 2) + "\n");
