/**
 * Weight upload throughput: a random-weight checkpoint of a real shape (`checkpoint.ts`, F16
 * safetensors; SmolLM2-135M's 269 MB by default) loaded onto the GPU by `GpuModel` (one KV block,
 * so the time is the weights'), against reading the same tensors' bytes from the same
 * `ByteSource` with nothing else to do (chunks of the staging size). Each pass is timed to the
 * GPU's completion; a first untimed read warms the OS page cache so both sides read from memory.
 * Also the highest JS heap + external memory seen during a load (sampled at each progress call).
 *
 *   deno run -A bench/engine/upload.ts [--shape S] [--rounds N] [--via staging,write] [--out F]
 */
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";
import { acquireGpu } from "../../src/gpu/device.ts";
import { openCheckpoint } from "../../src/model/checkpoint.ts";
import { GpuModel } from "../../src/runtime/gpu_model.ts";
import { STAGING_CHUNK_BYTES, type UploadVia } from "../../src/runtime/staging.ts";
import { weightList } from "../../src/model/weights.ts";
import { ensureCheckpoint } from "./checkpoint.ts";

const { flags } = runCli({
  name: "upload",
  command: "deno run -A bench/engine/upload.ts",
  about: "Weight upload throughput against a raw read of the same bytes; prints JSON.",
  flags: {
    shape: {
      type: "string",
      arg: "S",
      default: "smollm2-135m",
      help: "bench/engine/shapes/ shape",
    },
    rounds: { type: "integer", min: 1, default: 3, help: "timed passes of each (best kept)" },
    via: { type: "list", default: ["staging", "write"], help: "upload paths to time" },
    out: { type: "string", arg: "FILE", help: "also write the JSON report here" },
  },
});
const vias = flags.via as UploadVia[];
for (const v of vias) {
  if (v !== "staging" && v !== "write") throw new Error(`--via: staging or write, got ${v}`);
}

const log = (line: string) => console.error(line);
const dir = await ensureCheckpoint(flags.shape, { log });
const gpu = await acquireGpu({ label: "bench:upload" });
const mem = () => {
  const m = Deno.memoryUsage();
  return m.heapUsed + m.external;
};

async function rawRead(): Promise<number> {
  const checkpoint = await openCheckpoint(dirFiles(dir));
  let bytes = 0;
  for (const t of weightList(checkpoint.weights)) {
    for (let at = 0; at < t.length; at += STAGING_CHUNK_BYTES) {
      const n = Math.min(STAGING_CHUNK_BYTES, t.length - at);
      bytes += (await t.source.read(t.offset + at, n)).length;
    }
  }
  return bytes;
}

async function load(via: UploadVia): Promise<{ bytes: number; peakJsBytes: number }> {
  const checkpoint = await openCheckpoint(dirFiles(dir));
  const base = mem();
  let peak = 0, bytes = 0;
  const model = await GpuModel.fromCheckpoint(gpu, checkpoint, {
    kvBlocks: 1,
    upload: { via },
    onProgress: (done) => {
      bytes = done;
      peak = Math.max(peak, mem() - base);
    },
  });
  await gpu.device.queue.onSubmittedWorkDone();
  model.destroy();
  return { bytes, peakJsBytes: peak };
}

async function best<T>(f: () => Promise<T>): Promise<{ s: number; last: T }> {
  let s = Infinity, last: T | undefined;
  for (let r = 0; r < flags.rounds; r++) {
    const t0 = performance.now();
    last = await f();
    s = Math.min(s, (performance.now() - t0) / 1000);
  }
  return { s, last: last! };
}

await rawRead(); // warm the page cache
const raw = await best(rawRead);
const MB = 1e6;
const results: Record<string, unknown> = {
  raw_read: { seconds: raw.s, bytes: raw.last, mb_per_s: raw.last / MB / raw.s },
};
for (const via of vias) {
  const r = await best(() => load(via));
  results[via] = {
    seconds: r.s,
    bytes: r.last.bytes,
    mb_per_s: r.last.bytes / MB / r.s,
    ratio_to_raw_read: raw.s / r.s,
    peak_js_bytes: r.last.peakJsBytes,
  };
}
const report = {
  bench: "upload",
  date: new Date().toISOString(),
  adapter: gpu.caps.adapter,
  shape: flags.shape,
  staging_chunk_bytes: STAGING_CHUNK_BYTES,
  note: "best of --rounds passes; a load is GpuModel.fromCheckpoint with one KV block, timed to " +
    "onSubmittedWorkDone; raw_read reads every tensor from the same ByteSource in chunks of " +
    "the staging size; peak_js_bytes: heapUsed + external above the start, at progress calls.",
  results,
};
console.log(JSON.stringify(report, null, 2));
if (flags.out) await Deno.writeTextFile(flags.out, JSON.stringify(report, null, 2) + "\n");
gpu.device.destroy();
