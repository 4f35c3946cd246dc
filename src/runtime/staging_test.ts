/**
 * The two upload paths (`staging.ts`) put the same bytes in every weight buffer: the mapped
 * staging ring and `queue.writeBuffer` chunks, on the fortune model (lavapipe), with buffers that
 * span chunks and chunks that carry several small buffers; and so do the two ways bytes reach a
 * chunk: read straight into it (`ByteSource.readInto`, a file on disk) or read and copied.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { readBuffer } from "../gpu/buffers.ts";
import { testGpu } from "../../test/support/gpu.ts";
import { FORTUNE } from "../../test/support/fortune_engine.ts";
import { GpuModel } from "./gpu_model.ts";
import type { ByteSource, ModelFiles } from "../formats/source.ts";

/** `files` whose sources count the bytes read each way; `into: false` hides `readInto`. */
function counted(files: ModelFiles, into: boolean) {
  const bytes = { read: 0, readInto: 0 };
  const wrap = (s: ByteSource): ByteSource => ({
    name: s.name,
    size: s.size,
    read: (o, n) => (bytes.read += n, s.read(o, n)),
    ...(into && s.readInto
      ? { readInto: (o: number, b: Uint8Array) => (bytes.readInto += b.length, s.readInto!(o, b)) }
      : {}),
  });
  return {
    bytes,
    files: { ...files, open: async (n: string) => (await files.open(n).then((s) => s && wrap(s))) },
  };
}

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

Deno.test("upload: the staging ring, writeBuffer, and reads copied or read in place give the same weight buffers", async () => {
  const gpu = await testGpu();
  const ring = await GpuModel.load(gpu, dirFiles(FORTUNE), {
    kvBlocks: 1,
    upload: { via: "staging" },
  });
  const write = await GpuModel.load(gpu, dirFiles(FORTUNE), {
    kvBlocks: 1,
    upload: { via: "write" },
  });
  // Sources without readInto: each piece read, then copied into the chunk.
  const copied = counted(dirFiles(FORTUNE), false);
  const copy = await GpuModel.load(gpu, copied.files, { kvBlocks: 1, upload: { via: "staging" } });
  try {
    const a = weightBuffers(ring), b = weightBuffers(write);
    const d = weightBuffers(copy);
    equal(a.length, b.length);
    equal(a.length, d.length);
    ok(a.some((x) => x.size > 8 << 20) || a.length > 20, "buffers of several sizes");
    for (let i = 0; i < a.length; i++) {
      equal(a[i]!.label, b[i]!.label);
      const want = new Uint8Array(await readBuffer(gpu.device, b[i]!));
      deepStrictEqual(new Uint8Array(await readBuffer(gpu.device, a[i]!)), want, a[i]!.label);
      deepStrictEqual(new Uint8Array(await readBuffer(gpu.device, d[i]!)), want, d[i]!.label);
    }
    equal(copied.bytes.readInto, 0);
  } finally {
    ring.destroy();
    write.destroy();
    copy.destroy();
  }
});

Deno.test("upload: a source with readInto has the weights read straight into the staging chunks", async () => {
  const gpu = await testGpu();
  for (const via of ["staging", "write"] as const) {
    const c = counted(dirFiles(FORTUNE), true);
    const m = await GpuModel.load(gpu, c.files, { kvBlocks: 1, upload: { via } });
    try {
      const weights = weightBuffers(m).reduce((n, b) => n + b.size, 0);
      // Every weight byte came through readInto (buffers are padded to 4 bytes; the norms of a
      // checkpoint stored in another float type are converted, so read).
      ok(c.bytes.readInto > 0.9 * weights, `${via}: ${c.bytes.readInto} of ${weights} by readInto`);
      ok(c.bytes.read < 0.1 * weights, `${via}: ${c.bytes.read} bytes by read`);
    } finally {
      m.destroy();
    }
  }
});
