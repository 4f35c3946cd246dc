/**
 * The GPU memory ledger on real loads (lavapipe), each on a device of its own so that the ledger
 * holds nothing else: a model's weights are the bytes of the buffers it reads them from, its KV
 * cache the bytes the cache's size says, the upload's staging is gone once loaded, and all of it
 * is taken off again when the model is destroyed. An engine reports the same in `runtime_data`
 * and as `dynamo_component_gpu_memory_bytes{kind}`.
 */
import { match, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import type { ModelFiles } from "../formats/source.ts";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { WebGpuEngine } from "../engines/webgpu/engine.ts";
import { EngineMetrics, testHierarchy } from "../contract/metrics/engine_metrics.ts";
import { GpuModel } from "../runtime/gpu_model.ts";
import { FORTUNE } from "../../test/support/fortune_engine.ts";
import { acquireGpu } from "./device.ts";
import { memoryLedger } from "./memory_ledger.ts";

/** Every GPUBuffer reachable from `root`, once each. */
function buffers(root: unknown, out = new Set<GPUBuffer>()): Set<GPUBuffer> {
  if (root instanceof GPUBuffer) out.add(root);
  else if (Array.isArray(root)) { for (const v of root) buffers(v, out); }
  else if (root && typeof root === "object") {
    for (const v of Object.values(root)) {
      buffers(v, out);
    }
  }
  return out;
}
const bytesOf = (set: Set<GPUBuffer>) => [...set].reduce((n, b) => n + b.size, 0);

Deno.test("ledger: a model's weights and KV cache are the bytes of its buffers, and leave with it", async () => {
  const gpu = await acquireGpu({ label: "ledger-test" });
  try {
    const ledger = memoryLedger(gpu.device);
    const model = await GpuModel.load(gpu, dirFiles(FORTUNE), { kvBlocks: 24 });
    const s = ledger.snapshot();
    const weights = buffers([model.layers, model.embed, model.lmHead, model.finalNorm]);
    ok(weights.size > 10, `${weights.size} weight buffers`);
    equal(s.weights, bytesOf(weights));
    const c = model.config;
    equal(s.kv, 2 * c.numLayers * 24 * 16 * c.numKvHeads * c.headDim * 2); // f16 cache
    equal(s.kv, bytesOf(buffers([model.kCache, model.vCache])));
    equal(s.staging, 0, "the upload's staging buffers are freed once loaded");
    ok(s.peak >= s.weights + s.kv);
    equal(s.total, s.weights + s.kv + s.scratch + s.staging + s.other);
    model.destroy();
    model.destroy(); // twice: counted off once
    const after = ledger.snapshot();
    equal(after.weights, 0);
    equal(after.kv, 0);
  } finally {
    gpu.device.destroy();
  }
});

Deno.test("ledger: a weight file cut short mid-upload is InvalidArgument, and its buffers are freed", async () => {
  const gpu = await acquireGpu({ label: "ledger-truncated" });
  try {
    const inner = dirFiles(FORTUNE);
    const files: ModelFiles = {
      location: inner.location,
      open: async (name) => {
        const src = await inner.open(name);
        if (!src || name !== "model.safetensors") return src;
        // Past the middle of the file, every read comes back one byte short.
        const cut = Math.floor(src.size / 2);
        return {
          name: src.name,
          size: src.size,
          read: async (offset, length) => {
            const bytes = await src.read(offset, length);
            return offset + length > cut ? bytes.subarray(0, bytes.length - 1) : bytes;
          },
        };
      },
    };
    let uploaded = 0;
    await rejects(
      GpuModel.load(gpu, files, { kvBlocks: 4, onProgress: (n) => (uploaded = n) }),
      (e: unknown) =>
        e instanceof EngineError && e.type === "InvalidArgument" && /truncated/.test(e.message),
    );
    ok(uploaded > 0, "some weights were uploaded before the cut");
    const s = memoryLedger(gpu.device).snapshot();
    equal(s.weights, 0);
    equal(s.kv, 0);
    equal(s.staging, 0);
  } finally {
    gpu.device.destroy();
  }
});

Deno.test("ledger: an engine reports its GPU memory by kind in runtime_data and as a gauge", async () => {
  const e = new WebGpuEngine({ files: dirFiles(FORTUNE), name: "fortune", kvBlocks: 32 });
  const config = await e.start(0n);
  try {
    const mem = config.runtime_data?.gpu_memory_bytes as Record<string, number>;
    equal(mem.kv, config.runtime_data?.kv_cache_bytes);
    ok(mem.weights! > 9_000_000, `weights ${mem.weights}`); // fortune's 9.6 MB file
    ok(mem.scratch! > 0 && mem.pipelines! > 0, JSON.stringify(mem));
    equal(mem.total, mem.weights! + mem.kv! + mem.scratch! + mem.staging! + mem.other!);
    const metrics = EngineMetrics.fromHierarchy(testHierarchy());
    await e.setupMetrics({
      model: "fortune",
      component: "kiln",
      model_load_time_seconds: 0,
      metrics,
    });
    const body = metrics.render().body;
    match(body, new RegExp(`dynamo_component_gpu_memory_bytes\\{[^}]*kind="kv"[^}]*\\} ${mem.kv}`));
    match(body, /dynamo_component_gpu_memory_bytes\{[^}]*kind="weights"/);
    match(body, /dynamo_component_gpu_memory_peak_bytes\{/);
  } finally {
    await e.cleanup();
  }
});
