/**
 * What the device can do, measured by two probes the benchmark puts Kiln's figures beside:
 * `read_probe.wgsl` (eight 16-byte loads in flight per thread, only reads cost anything) over one
 * buffer larger than any cache, against which decode weight reads are put; and `fma_probe.wgsl`
 * (eight independent vec4 FMA chains per thread, registers only), against which prefill FLOP/s
 * are put. Timed with timestamp queries when the device has them, else wall time.
 */
import type { Gpu } from "../../src/gpu/device.ts";
import { grid } from "../../src/gpu/dispatch.ts";
import { readBuffer, storageBuffer } from "../../src/gpu/buffers.ts";

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
  const { pipeline, params } = await probePipeline(device, "read_probe");
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
  try {
    const t = await timeDispatches(gpu, "bench:probe", pipeline, bindGroup, workgroups, opts);
    return {
      bytes,
      dispatches: t.dispatches,
      seconds_per_dispatch: t.seconds,
      gb_per_s: bytes / t.seconds / 1e9,
      timer: t.timer,
    };
  } finally {
    for (const b of [src, params, sink]) b.destroy();
  }
}

/** The pipeline of `bench/probes/<name>.wgsl` (entry `main`) and a 16-byte uniform for its params. */
async function probePipeline(device: GPUDevice, name: string) {
  const module = device.createShaderModule({
    label: `bench:${name}`,
    code: await Deno.readTextFile(new URL(`./${name}.wgsl`, import.meta.url)),
  });
  const pipeline = await device.createComputePipelineAsync({
    label: `bench:${name}`,
    layout: "auto",
    compute: { module, entryPoint: "main" },
  });
  const params = device.createBuffer({
    label: `bench:${name}_params`,
    size: 16,
    usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
  });
  return { pipeline, params };
}

/** Seconds per dispatch, best of three passes of `dispatches` each (sized to `minSeconds`). */
export interface DispatchTiming {
  seconds: number;
  dispatches: number;
  timer: "timestamp" | "wall";
}

/**
 * Time `pipeline` over `workgroups`: one pass to warm up and size the timed ones, then the best of
 * three passes of up to 50 dispatches each (about `minSeconds`, default 0.2 s, in all).
 */
export async function timeDispatches(
  gpu: Gpu,
  label: string,
  pipeline: GPUComputePipeline,
  bindGroup: GPUBindGroup,
  workgroups: readonly [number, number],
  opts: { minSeconds?: number } = {},
): Promise<DispatchTiming> {
  const { device, caps } = gpu;
  const query = caps.timestamps
    ? device.createQuerySet({ label: `${label}:ts`, type: "timestamp", count: 2 })
    : undefined;
  const resolve = device.createBuffer({
    label: `${label}:ts_resolve`,
    size: 16,
    usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
  });
  const result = storageBuffer(device, `${label}:ts_result`, 16);
  let wallOnly = query === undefined;
  /** Seconds for `n` dispatches in one pass. */
  const pass = async (n: number): Promise<number> => {
    const enc = device.createCommandEncoder({ label });
    const p = enc.beginComputePass({
      label,
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
    const once = await pass(1);
    const n = Math.max(1, Math.min(50, Math.ceil((opts.minSeconds ?? 0.2) / Math.max(once, 1e-6))));
    const best = Math.min(await pass(n), await pass(n), await pass(n)) / n;
    return { seconds: best, dispatches: n, timer: wallOnly ? "wall" : "timestamp" };
  } finally {
    resolve.destroy();
    result.destroy();
    query?.destroy();
  }
}

/** What the FMA probe measured. */
export interface FmaProbeResult {
  /** Threads per dispatch and FMA rounds per thread (8 vec4 FMAs, 64 FLOPs, a round). */
  threads: number;
  rounds: number;
  seconds_per_dispatch: number;
  gflop_per_s: number;
  timer: "timestamp" | "wall";
}

/**
 * f32 FLOP/s of `fma_probe.wgsl`: `workgroups` of 256 threads (default 2048: enough to fill a
 * large GPU), the rounds per thread raised until one dispatch takes `minDispatchSeconds`.
 */
export async function fmaProbe(
  gpu: Gpu,
  opts: { workgroups?: number; minDispatchSeconds?: number } = {},
): Promise<FmaProbeResult> {
  const { device } = gpu;
  const { pipeline, params } = await probePipeline(device, "fma_probe");
  const sink = storageBuffer(device, "bench:fma_sink", 16);
  const bindGroup = device.createBindGroup({
    label: "bench:fma_probe",
    layout: pipeline.getBindGroupLayout(0),
    entries: [
      { binding: 0, resource: { buffer: params } },
      { binding: 1, resource: { buffer: sink } },
    ],
  });
  const workgroups = grid(device, opts.workgroups ?? 2048);
  const threads = workgroups[0] * workgroups[1] * 256;
  try {
    let rounds = 16;
    let t: DispatchTiming;
    for (;;) {
      device.queue.writeBuffer(params, 0, Uint32Array.of(rounds, 0, 0, 0));
      t = await timeDispatches(gpu, "bench:fma_probe", pipeline, bindGroup, workgroups, {
        minSeconds: 0,
      });
      if (t.seconds >= (opts.minDispatchSeconds ?? 0.005) || rounds >= 1 << 20) break;
      rounds *= 4;
    }
    device.queue.writeBuffer(params, 0, Uint32Array.of(rounds, 0, 0, 0));
    t = await timeDispatches(gpu, "bench:fma_probe", pipeline, bindGroup, workgroups);
    return {
      threads,
      rounds,
      seconds_per_dispatch: t.seconds,
      gflop_per_s: (threads * rounds * 64) / t.seconds / 1e9,
      timer: t.timer,
    };
  } finally {
    params.destroy();
    sink.destroy();
  }
}
