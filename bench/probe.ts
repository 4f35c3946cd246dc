/**
 * What the device can stream: `read_probe.wgsl` (eight 16-byte loads in flight per thread, only
 * reads cost anything) over one buffer larger than any cache, timed with timestamp queries
 * when the device has them, else wall time. The benchmark puts Kiln's decode weight reads
 * beside this number.
 */
import type { Gpu } from "../src/gpu/device.ts";
import { grid } from "../src/gpu/dispatch.ts";
import { readBuffer, storageBuffer } from "../src/gpu/buffers.ts";

export interface ProbeResult {
  bytes: number;
  dispatches: number;
  seconds_per_dispatch: number;
  gb_per_s: number;
  timer: "timestamp" | "wall";
}

/** Read `bytes` (default 1 GiB, capped by the device's binding limits) and report GB/s. */
export async function readProbe(
  gpu: Gpu,
  opts: { bytes?: number; minSeconds?: number } = {},
): Promise<ProbeResult> {
  const { device, caps } = gpu;
  const cap = Math.min(caps.maxStorageBufferBindingSize, caps.maxBufferSize);
  const bytes = Math.floor(Math.min(opts.bytes ?? 2 ** 30, cap) / 2 ** 20) * 2 ** 20;
  const src = device.createBuffer({
    label: "bench:probe_src",
    size: bytes,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
  });
  // Real data, not the zero pages a fresh allocation may share on a CPU adapter.
  const chunk = new Uint32Array(2 ** 22);
  for (let i = 0; i < chunk.length; i++) chunk[i] = Math.imul(i + 1, 2654435761);
  for (let off = 0; off < bytes; off += chunk.byteLength) {
    device.queue.writeBuffer(src, off, chunk, 0, Math.min(chunk.length, (bytes - off) / 4));
  }
  const module = device.createShaderModule({
    label: "bench:read_probe",
    code: await Deno.readTextFile(new URL("./read_probe.wgsl", import.meta.url)),
  });
  const pipeline = await device.createComputePipelineAsync({
    label: "bench:read_probe",
    layout: "auto",
    compute: { module, entryPoint: "main" },
  });
  const params = device.createBuffer({
    label: "bench:probe_params",
    size: 16,
    usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
  });
  device.queue.writeBuffer(params, 0, Uint32Array.of(bytes / 16, 0, 0, 0));
  const sink = storageBuffer(device, "bench:probe_sink", 16);
  const bindGroup = device.createBindGroup({
    label: "bench:probe",
    layout: pipeline.getBindGroupLayout(0),
    entries: [
      { binding: 0, resource: { buffer: params } },
      { binding: 1, resource: { buffer: src } },
      { binding: 2, resource: { buffer: sink } },
    ],
  });
  const workgroups = grid(device, Math.min(Math.ceil(bytes / 16 / 2048), 8192));
  const query = caps.timestamps
    ? device.createQuerySet({ label: "bench:probe_ts", type: "timestamp", count: 2 })
    : undefined;
  const resolve = device.createBuffer({
    label: "bench:probe_ts_resolve",
    size: 16,
    usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
  });
  const result = storageBuffer(device, "bench:probe_ts_result", 16);

  let wallOnly = query === undefined;
  /** Seconds for `n` dispatches in one pass. */
  const pass = async (n: number): Promise<number> => {
    const enc = device.createCommandEncoder({ label: "bench:probe" });
    const p = enc.beginComputePass({
      label: "bench:probe",
      ...(query
        ? {
          timestampWrites: {
            querySet: query,
            beginningOfPassWriteIndex: 0,
            endOfPassWriteIndex: 1,
          },
        }
        : {}),
    });
    p.setPipeline(pipeline);
    p.setBindGroup(0, bindGroup);
    for (let i = 0; i < n; i++) p.dispatchWorkgroups(workgroups[0], workgroups[1]);
    p.end();
    if (query) {
      enc.resolveQuerySet(query, 0, 2, resolve, 0);
      enc.copyBufferToBuffer(resolve, 0, result, 0, 16);
    }
    const t0 = performance.now();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    const wall = (performance.now() - t0) / 1000;
    if (!query) return wall;
    const ts = new BigUint64Array(await readBuffer(device, result, 16));
    const gpuSeconds = Number(ts[1]! - ts[0]!) / 1e9;
    if (gpuSeconds > 0) return gpuSeconds;
    wallOnly = true; // timestamps that read zero (or run backwards): wall time instead
    return wall;
  };
  try {
    const once = await pass(1); // warm up, and size the timed passes
    const n = Math.max(1, Math.min(50, Math.ceil((opts.minSeconds ?? 0.2) / Math.max(once, 1e-6))));
    const best = Math.min(await pass(n), await pass(n), await pass(n)) / n;
    return {
      bytes,
      dispatches: n,
      seconds_per_dispatch: best,
      gb_per_s: bytes / best / 1e9,
      timer: wallOnly ? "wall" : "timestamp",
    };
  } finally {
    for (const b of [src, params, sink, resolve, result]) b.destroy();
    query?.destroy();
  }
}
