/**
 * Decode matrix-vector bandwidth: y = x·Wᵀ for one activation row against F16/F32 weights,
 * timed on the GPU with timestamp queries when the device has them (else wall time over many
 * dispatches in one submit), side by side with a peer: a read-only probe over the same bytes
 * with eight 16-byte loads in flight per thread (what the device can stream). Prints JSON with
 * GB/s for both and their ratio, per shape and dtype.
 *
 *   deno run -A bench/kernels/matmul.ts [--small] [--out bench/results/matmul.json]
 */
import { dispatchTimer } from "../lib/timer.ts";
import { acquireGpu } from "../../src/gpu/device.ts";
import { storageBuffer } from "../../src/gpu/buffers.ts";
import { DTYPE_BYTES, encodeWeights, type WeightDtype } from "../../src/gpu/dtype.ts";
import { prepareLinear } from "../../src/gpu/product/product.ts";
import { grid } from "../../src/gpu/dispatch.ts";
import type { Dispatch } from "../../src/gpu/dispatch.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";

const { flags } = runCli({
  name: "matmul",
  command: "deno run -A bench/kernels/matmul.ts",
  about: "Decode matrix-vector bandwidth against a read probe over the same bytes; prints JSON.",
  flags: {
    small: { type: "boolean", help: "small shapes and few iterations (CPU adapters)" },
    out: { type: "string", arg: "FILE", help: "also write the JSON report here" },
  },
});
const small = flags.small;
const outPath = flags.out;
const shapes: [number, number][] = small
  ? [[256, 256], [768, 256]]
  : [[4096, 4096], [11008, 4096], [4096, 11008], [32000, 4096]];
const dtypes: WeightDtype[] = ["f16", "f32"];
const ITERS = small ? 5 : 50;

const gpu = await acquireGpu({ label: "bench-matmul" });
const { device, caps } = gpu;
const results: Record<string, unknown>[] = [];

const probeModule = device.createShaderModule({
  label: "bench:read_probe",
  code: await Deno.readTextFile(new URL("../probes/read_probe.wgsl", import.meta.url)),
});
const probePipeline = await device.createComputePipelineAsync({
  label: "bench:read_probe",
  layout: "auto",
  compute: { module: probeModule, entryPoint: "main" },
});
const sink = storageBuffer(device, "bench:sink", 16);

/** The read probe over `w` (whole 16-byte vectors), as a dispatch. */
function probe(w: GPUBuffer): Dispatch {
  const vecs = Math.floor(w.size / 16);
  const uniform = device.createBuffer({
    label: "bench:probe_params",
    size: 16,
    usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
  });
  device.queue.writeBuffer(uniform, 0, Uint32Array.of(vecs, 0, 0, 0));
  const bindGroup = device.createBindGroup({
    label: "bench:probe",
    layout: probePipeline.getBindGroupLayout(0),
    entries: [{ binding: 0, resource: { buffer: uniform } }, {
      binding: 1,
      resource: { buffer: w },
    }, { binding: 2, resource: { buffer: sink } }],
  });
  // About two waves of 256-thread workgroups per SM-sized slice of the data.
  return {
    label: "bench:probe",
    pipeline: probePipeline,
    bindGroup,
    workgroups: grid(device, Math.min(Math.ceil(vecs / 2048), 8192)),
  };
}

const timer = dispatchTimer(device, caps.timestamps);

const skipped: string[] = [];
for (const dtype of dtypes) {
  for (const [n, k] of shapes) {
    if (n * k * DTYPE_BYTES[dtype] > device.limits.maxStorageBufferBindingSize) {
      skipped.push(`${dtype} ${n}x${k}: over maxStorageBufferBindingSize`);
      console.error(
        `${dtype} ${n}x${k}: skipped (one binding holds at most ${device.limits.maxStorageBufferBindingSize} bytes)`,
      );
      continue;
    }
    const bytes = encodeWeights(
      new Float32Array(n * k).map((_, i) => ((i * 2654435761) % 1000) / 1000 - 0.5),
      dtype,
    );
    const w = device.createBuffer({
      label: "bench:w",
      size: bytes.byteLength,
      usage: GPUBufferUsage.STORAGE,
      mappedAtCreation: true,
    });
    new Uint8Array(w.getMappedRange()).set(bytes);
    w.unmap();
    const x = storageBuffer(device, "bench:x", k * 4);
    const y = storageBuffer(device, "bench:y", n * 4);
    const matvec = await timer.time(
      await prepareLinear(device, { x, w, y, m: 1, n, k, type: dtype }, "bench:linear"),
      ITERS,
    );
    const peer = await timer.time(probe(w), ITERS);
    const gbps = bytes.byteLength / matvec / 1e9;
    const peerGbps = bytes.byteLength / peer / 1e9;
    results.push({
      dtype,
      n,
      k,
      bytes: bytes.byteLength,
      us_per_matvec: matvec * 1e6,
      gb_per_s: gbps,
      peer_read_probe_gb_per_s: peerGbps,
      ratio_to_peer: gbps / peerGbps,
      timer: timer.kind,
    });
    console.error(
      `${dtype} ${n}x${k}: ${(matvec * 1e6).toFixed(1)} us, ${gbps.toFixed(2)} GB/s; probe ${
        peerGbps.toFixed(2)
      } GB/s; ratio ${(gbps / peerGbps).toFixed(2)}`,
    );
    w.destroy();
    x.destroy();
    y.destroy();
  }
}
const report = {
  bench: "matmul-decode",
  adapter: caps.adapter,
  date: new Date().toISOString(),
  iterations: ITERS,
  results,
  skipped,
};
console.log(JSON.stringify(report, null, 2));
if (outPath) await Deno.writeTextFile(outPath, JSON.stringify(report, null, 2) + "\n");
