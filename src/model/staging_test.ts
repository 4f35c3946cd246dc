/**
 * The two upload paths (`staging.ts`) put the same bytes in every weight buffer: the mapped
 * staging ring and `queue.writeBuffer` chunks, on the fortune model (lavapipe), with buffers that
 * span chunks and chunks that carry several small buffers.
 */
import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { readBuffer } from "../gpu/buffers.ts";
import { testGpu } from "../../test/support/gpu.ts";
import { FORTUNE } from "../../test/support/fortune_engine.ts";
import { GpuModel } from "./gpu_model.ts";

function weightBuffers(m: GpuModel): GPUBuffer[] {
  const out: GPUBuffer[] = [];
  const walk = (v: unknown): void => {
    if (v instanceof GPUBuffer) out.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === "object") Object.values(v).forEach(walk);
  };
  walk([m.embed, m.layers, m.finalNorm, m.lmHead]);
  return out;
}

Deno.test("upload: the staging ring, writeBuffer, with and without read-ahead, give the same weight buffers", async () => {
  const gpu = await testGpu();
  const ring = await GpuModel.load(gpu, dirFiles(FORTUNE), {
    kvBlocks: 1,
    upload: { via: "staging" },
  });
  const write = await GpuModel.load(gpu, dirFiles(FORTUNE), {
    kvBlocks: 1,
    upload: { via: "write" },
  });
  // Read-ahead on: the next piece read early, dropped where the upload's order leaves the file's.
  const ahead = await GpuModel.load(gpu, dirFiles(FORTUNE), {
    kvBlocks: 1,
    upload: { via: "write", readAhead: true },
  });
  try {
    const a = weightBuffers(ring), b = weightBuffers(write), c = weightBuffers(ahead);
    equal(a.length, b.length);
    equal(a.length, c.length);
    ok(a.some((x) => x.size > 8 << 20) || a.length > 20, "buffers of several sizes");
    for (let i = 0; i < a.length; i++) {
      equal(a[i]!.label, b[i]!.label);
      const want = new Uint8Array(await readBuffer(gpu.device, b[i]!));
      deepStrictEqual(new Uint8Array(await readBuffer(gpu.device, a[i]!)), want, a[i]!.label);
      deepStrictEqual(new Uint8Array(await readBuffer(gpu.device, c[i]!)), want, c[i]!.label);
    }
  } finally {
    ring.destroy();
    write.destroy();
    ahead.destroy();
  }
});
