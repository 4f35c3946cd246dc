/**
 * The upload applies a tensor's row order (`WeightInfo.rowOrder`, which a format's reader sets:
 * GGUF's llama.cpp q/k rows) knowing nothing of why: rows stored out of HF order reach the GPU in
 * HF order, for a matrix split by rows over several buffers and for a vector (whose elements are
 * its rows). The expected bytes are built here from HF-order values and a permutation chosen
 * here. Planted: an upload that ignores the row order (the tensor without it) is rejected.
 */
import { deepStrictEqual, notDeepStrictEqual, strictEqual as equal } from "node:assert/strict";
import { readBuffer } from "../gpu/buffers.ts";
import type { WeightInfo } from "../model/weights.ts";
import { testGpu } from "../../test/support/gpu.ts";
import { StagingWriter } from "./staging.ts";
import { allocatePlan, fillPlan, planStack } from "./upload.ts";

/** HF row i is stored row ORDER[i]. */
const ORDER = Uint32Array.from([3, 0, 5, 1, 4, 2]);

/** A tensor of `shape` whose HF-order values are `hf`, stored with rows in ORDER's places. */
function stored(name: string, shape: number[], hf: Float32Array, order?: Uint32Array): WeightInfo {
  const cols = hf.length / ORDER.length;
  const bytes = new Float32Array(hf.length);
  ORDER.forEach((s, i) => bytes.set(hf.subarray(i * cols, (i + 1) * cols), s * cols));
  const raw = new Uint8Array(bytes.buffer);
  return {
    name,
    dtype: "f32",
    shape,
    offset: 0,
    length: raw.length,
    source: { name, size: raw.length, read: (at, n) => Promise.resolve(raw.slice(at, at + n)) },
    ...(order ? { rowOrder: () => order } : {}),
  };
}

/** What the upload puts in `t`'s buffers (at most `limit` bytes each), concatenated. */
async function uploaded(device: GPUDevice, t: WeightInfo, limit: number): Promise<Float32Array> {
  const plans = planStack(t.name, [t], limit);
  const writer = new StagingWriter(device);
  const out: number[] = [];
  try {
    for (const plan of plans) {
      const buffer = allocatePlan(device, plan, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
      await fillPlan(plan, buffer, () => {}, writer);
      await writer.close();
      out.push(...new Float32Array(await readBuffer(device, buffer)));
      buffer.destroy();
    }
  } finally {
    writer.destroy();
  }
  equal(plans.length, limit === Infinity ? 1 : 2, `${t.name}: buffers`);
  return Float32Array.from(out);
}

Deno.test("upload: rows stored out of HF order (rowOrder) reach the GPU in HF order, a matrix over two buffers and a vector; planted: an upload ignoring the order is rejected", async () => {
  const { device } = await testGpu();
  const matrix = Float32Array.from({ length: 6 * 4 }, (_, i) => i + 1);
  const vector = Float32Array.from({ length: 6 }, (_, i) => 10 * (i + 1));
  // 4 rows of 4 f32 fit a binding of 64 bytes: the matrix takes buffers of 4 and 2 rows.
  const cases = [
    { name: "w", shape: [6, 4], hf: matrix, limit: 64 },
    { name: "b", shape: [6], hf: vector, limit: Infinity },
  ];
  for (const c of cases) {
    const t = stored(c.name, c.shape, c.hf, ORDER);
    deepStrictEqual(await uploaded(device, t, c.limit), c.hf, c.name);
    // The mutant: the same bytes uploaded as stored.
    notDeepStrictEqual(await uploaded(device, stored(c.name, c.shape, c.hf), c.limit), c.hf);
  }
});
