/**
 * In the browser: decode products (one activation row) through `prepareLinear` on two devices of
 * the same adapter, one with `subgroups` (taking `matvec_subgroups.wgsl`) and one without (the
 * barrier-reduced `matvec.wgsl`), timed as wall time over many dispatches in one submit. Run by
 * `node bench/matvec_browser.mjs`; results land on `window.__kiln.report`.
 */
import { acquireGpu, type Gpu } from "../../src/gpu/device.ts";
import { storageBuffer, uploadBuffer } from "../../src/gpu/buffers.ts";
import { encodeDispatches } from "../../src/gpu/dispatch.ts";
import { encodeWeights, type WeightDtype } from "../../src/gpu/dtype.ts";
import { prepareLinear } from "../../src/gpu/kernels/linear.ts";

const SHAPES: [number, number][] = [[256, 256], [768, 256], [256, 768], [2048, 2048]];
const DTYPES: WeightDtype[] = ["f16", "f32"];
const ITERS = 20;

async function msPerProduct(gpu: Gpu, dtype: WeightDtype, n: number, k: number): Promise<number> {
  const d = gpu.device;
  const w = uploadBuffer(d, "bench:w", encodeWeights(new Float64Array(n * k).fill(0.25), dtype));
  const x = storageBuffer(d, "bench:x", k * 4);
  const y = storageBuffer(d, "bench:y", n * 4);
  const dispatch = await prepareLinear(d, { x, w, y, m: 1, n, k, dtype }, "bench:linear");
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

const withSubgroups = await acquireGpu({ label: "bench:subgroups" });
const without = await acquireGpu({ label: "bench:no-subgroups", disable: ["subgroups"] });
const results = [];
for (const dtype of DTYPES) {
  for (const [n, k] of SHAPES) {
    const subgroups = await msPerProduct(withSubgroups, dtype, n, k);
    const barrier = await msPerProduct(without, dtype, n, k);
    results.push({
      dtype,
      n,
      k,
      subgroups_ms: subgroups,
      barrier_ms: barrier,
      subgroups_speedup: barrier / subgroups,
    });
  }
}
(globalThis as unknown as { __kiln: unknown }).__kiln = {
  done: true,
  results: [],
  report: {
    bench: "matvec-subgroups",
    adapter: withSubgroups.caps.adapter,
    subgroups: withSubgroups.caps.subgroups,
    date: new Date().toISOString(),
    iters: ITERS,
    results,
  },
};
