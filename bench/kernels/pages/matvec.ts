/**
 * In the browser: decode products (one activation row) through `prepareMatvec` (the
 * product kernels' matrix-vector kernel, float weights as formats of it) with one thread
 * per output row (no reduction: what CPU adapters take) and with 32 threads per row reduced
 * through workgroup memory (what GPUs take), on one device, timed as wall time over many
 * dispatches in one submit. Run by `node bench/kernels/matvec_browser.mjs`; results land on
 * `window.__kiln.report`.
 */
import { acquireGpu, type Gpu } from "../../../src/gpu/device.ts";
import { storageBuffer, uploadBuffer } from "../../../src/gpu/buffers.ts";
import { encodeDispatches } from "../../../src/gpu/dispatch.ts";
import { encodeWeights, type WeightDtype } from "../../../src/gpu/dtype.ts";
import { prepareMatvec } from "../../../src/gpu/product/matvec.ts";

const SHAPES: [number, number][] = [[256, 256], [768, 256], [256, 768], [2048, 2048]];
const DTYPES: WeightDtype[] = ["f16", "f32"];
const ITERS = 20;

async function msPerProduct(
  gpu: Gpu,
  dtype: WeightDtype,
  n: number,
  k: number,
  threadsPerRow: number,
): Promise<number> {
  const d = gpu.device;
  const w = uploadBuffer(d, "bench:w", encodeWeights(new Float64Array(n * k).fill(0.25), dtype));
  const x = storageBuffer(d, "bench:x", k * 4);
  const y = storageBuffer(d, "bench:y", n * 4);
  const dispatch = await prepareMatvec(
    d,
    { x, w, y, m: 1, n, k, type: dtype, threadsPerRow },
    "bench:matvec",
  );
  const run = async (iters: number) => {
    const t = performance.now();
    const encoder = d.createCommandEncoder({ label: "bench" });
    encodeDispatches(encoder, Array(iters).fill(dispatch), "bench");
    d.queue.submit([encoder.finish()]);
    await d.queue.onSubmittedWorkDone();
    return (performance.now() - t) / iters;
  };
  await run(2); // compile and warm
  const ms = await run(ITERS);
  for (const b of [w, x, y, dispatch.uniform]) b.destroy();
  return ms;
}

const gpu = await acquireGpu({ label: "bench:matvec" });
const results = [];
for (const dtype of DTYPES) {
  for (const [n, k] of SHAPES) {
    const row = await msPerProduct(gpu, dtype, n, k, 1);
    const barrier = await msPerProduct(gpu, dtype, n, k, 32);
    results.push({
      dtype,
      n,
      k,
      thread_per_row_ms: row,
      barrier_ms: barrier,
      thread_per_row_speedup: barrier / row,
    });
  }
}
(globalThis as unknown as { __kiln: unknown }).__kiln = {
  done: true,
  results: [],
  report: {
    bench: "matvec-threads",
    adapter: gpu.caps.adapter,
    date: new Date().toISOString(),
    iters: ITERS,
    results,
  },
};
