/**
 * Quantized decode matvec vs F16 at SmolLM2-135M's shapes: y = x·Wᵀ with W in a GGUF block
 * format (`prepareMatvec`, dequantized in registers) on each of its two thread paths —
 * one thread per output row (`threadsPerRow` 1, the CPU-adapter default) and 32 threads per row
 * reduced through workgroup memory (the GPU default) — and in F16 (`prepareLinear`) on the same
 * adapter in one run. Shapes n × k: 1536 × 576 (gate or up), 576 × 1536 (down), 49152 × 576 (the
 * LM head); the K-quants take k = 512 where SmolLM2 has 576 (not whole 256-blocks; GGUF files
 * store those tensors in another type). Timed on the GPU with timestamp queries when the device
 * has them, else wall time over a few dispatches in one submit. Prints JSON: µs per product,
 * weight GB/s, and the F16 time over the quantized time (> 1: the quantized kernel is faster).
 *
 *   deno run -A bench/kernels/quant.ts [--small] [--types Q8_0,Q4_K] [--out bench/results/quant-lavapipe.json]
 */
import { dispatchTimer } from "../lib/timer.ts";
import { acquireGpu } from "../../src/gpu/device.ts";
import { readF32, storageBuffer, uploadBuffer } from "../../src/gpu/buffers.ts";
import { encodeWeights } from "../../src/gpu/dtype.ts";
import { prepareLinear } from "../../src/gpu/product/product.ts";
import { prepareMatvec } from "../../src/gpu/product/matvec.ts";
import { QUANT_FORMATS, QUANT_TYPES, type QuantType } from "../../src/gpu/formats/registry.ts";
import { randomBlocks } from "../../src/gpu/formats/random_blocks.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";

const { flags } = runCli({
  name: "quant",
  command: "deno run -A bench/kernels/quant.ts",
  about: "Quantized decode matvec against F16 at SmolLM2-135M's shapes, on both thread paths; " +
    "prints JSON.",
  flags: {
    small: { type: "boolean", help: "two shapes, few dispatches (CPU adapters)" },
    types: {
      type: "list",
      choices: QUANT_TYPES,
      default: ["Q8_0", "Q4_K", "Q6_K"],
      help: "the block formats",
    },
    out: { type: "string", arg: "FILE", help: "also write the JSON report here" },
  },
});
const small = flags.small;
const outPath = flags.out;
const types: QuantType[] = flags.types;
/** Threads per output row: the CPU-adapter path and the GPU path. */
const PATHS = [1, 32];

/** Dispatches per timed pass: fewer for the LM head, which takes up to seconds on lavapipe. */
const iters = (n: number, tpr = 1) => small ? 2 : n > 10000 ? (tpr > 1 ? 1 : 3) : 10;
/** Activation rows: decode (1) everywhere, and 8 on the gate/up shape. */
const rowsFor = (n: number, k: number) => n === 1536 && k === 576 ? [1, 8] : [1];

const shapesFor = (type: QuantType): [number, number][] => {
  const k = (want: number) =>
    QUANT_FORMATS[type].blockSize === 32 ? want : want === 576 ? 512 : want;
  const all: [number, number][] = [[1536, k(576)], [576, k(1536)], [49152, k(576)]];
  return small ? all.slice(0, 2) : all;
};

const { device, caps } = await acquireGpu({ label: "bench-quant" });
const timer = dispatchTimer(device, caps.timestamps);

/** F16 weights of `count` elements: pseudo-random values in ±0.5 (content does not matter). */
function f16Weights(count: number): Uint8Array {
  const v = new Float32Array(count);
  for (let i = 0; i < count; i++) v[i] = ((i * 2654435761) % 1000) / 1000 - 0.5;
  return encodeWeights(v, "f16");
}

/** Seconds per F16 product, per "n,k,m", measured once per shape. */
const f16Times = new Map<string, number>();

async function f16Time(n: number, k: number, m: number): Promise<number> {
  const key = `${n},${k},${m}`;
  const known = f16Times.get(key);
  if (known !== undefined) return known;
  const w = uploadBuffer(device, "bench:w16", f16Weights(n * k));
  const x = storageBuffer(device, "bench:x", m * k * 4);
  const y = storageBuffer(device, "bench:y", m * n * 4);
  const d = await prepareLinear(device, { x, w, y, m, n, k, type: "f16" }, "bench:f16");
  const t = await timer.time(d, iters(n));
  [w, x, y].forEach((b) => b.destroy());
  f16Times.set(key, t);
  return t;
}

const results: Record<string, unknown>[] = [];
for (const type of types) {
  const f = QUANT_FORMATS[type];
  for (const [n, k] of shapesFor(type)) {
    const bytes = randomBlocks(type, n * k, n + k);
    const w = uploadBuffer(device, "bench:wq", bytes);
    for (const m of rowsFor(n, k)) {
      const t16 = await f16Time(n, k, m);
      const x = uploadBuffer(device, "bench:x", new Float32Array(m * k).fill(0.01));
      const y = storageBuffer(device, "bench:y", m * n * 4);
      for (const tpr of PATHS) {
        const d = await prepareMatvec(
          device,
          { x, w, y, m, n, k, type, threadsPerRow: tpr },
          "bench:quant",
        );
        const t = await timer.time(d, iters(n, tpr));
        const yv = await readF32(device, y, m * n);
        if (!yv.every(Number.isFinite)) throw new Error(`${type} ${n}x${k}: non-finite output`);
        const row = {
          type,
          n,
          k,
          m,
          threads_per_row: tpr,
          iterations: iters(n, tpr),
          bytes: bytes.byteLength,
          bytes_per_weight: f.blockBytes / f.blockSize,
          us_per_matvec: t * 1e6,
          weight_gb_per_s: bytes.byteLength / t / 1e9,
          f16_bytes: n * k * 2,
          f16_us_per_matvec: t16 * 1e6,
          f16_weight_gb_per_s: (n * k * 2) / t16 / 1e9,
          f16_time_over_quant_time: t16 / t,
        };
        results.push(row);
        console.error(
          `${type} ${n}x${k} m=${m} tpr=${tpr}: ${(t * 1e6).toFixed(0)} us (${
            row.weight_gb_per_s.toFixed(3)
          } GB/s), f16 ${(t16 * 1e6).toFixed(0)} us (${
            row.f16_weight_gb_per_s.toFixed(3)
          } GB/s), f16/quant ${(t16 / t).toFixed(2)}`,
        );
      }
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
    "threads_per_row 1: one thread per output row, 8 rows per thread at m = 1 (the CPU-adapter default); 32: 32 threads per row reduced in workgroup memory (the GPU default). F16 uses prepareLinear (the same product kernels with the F16 format, its default path for this adapter). K-quants use k = 512 for SmolLM2's k = 576.",
  results,
};
console.log(JSON.stringify(report, null, 2));
if (outPath) await Deno.writeTextFile(outPath, JSON.stringify(report, null, 2) + "\n");
