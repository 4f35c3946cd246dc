/**
 * Fit before load: the memory budget's sources, a model refused from its headers before any
 * weight byte is read (naming the bytes needed and available), and the default KV cache sized
 * by what the budget leaves (`kv_blocks_source: "memory"`).
 */
import { match, ok, rejects, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { openCheckpoint } from "../../model/checkpoint.ts";
import type { ModelFiles } from "../../formats/source.ts";
import { weightList } from "../../model/weights.ts";
import { FORTUNE } from "../../../test/support/fortune_engine.ts";
import { rangeServer } from "../../../test/support/range_server.ts";
import { MemoryStorage } from "../../store/memory.ts";
import { ModelStore } from "../../store/store.ts";
import { testGpu } from "../../../test/support/gpu.ts";
import { WebGpuEngine } from "./engine.ts";
import {
  DEFAULT_GPU_MEMORY_BYTES,
  kvBlockBytes,
  memoryBudget,
  scratchBytes,
  weightBytes,
} from "./fit.ts";
import { chooseKvSize } from "./kv_size.ts";

const GiB = 1024 ** 3;
const STEPS = { maxNumSeqs: 16, maxNumBatchedTokens: 256 };

Deno.test("memory budget: the option, else half the device's memory, else 4 GiB", () => {
  equal(memoryBudget(123_456, 8).bytes, 123_456);
  equal(memoryBudget(123_456, 8).source, "option");
  equal(memoryBudget(undefined, 8).bytes, 4 * GiB);
  equal(memoryBudget(undefined, 8).source, "device_memory");
  equal(memoryBudget(undefined, 2).bytes, 1 * GiB);
  equal(memoryBudget(undefined, undefined).bytes, DEFAULT_GPU_MEMORY_BYTES);
  equal(memoryBudget(undefined, undefined).source, "default");
  for (const bad of [0, -1, Number.NaN, Infinity]) {
    throws(
      () => memoryBudget(bad),
      (e: unknown) => e instanceof EngineError && e.type === "InvalidArgument",
    );
  }
});

Deno.test("kv size: the budget's room decides when it is the smallest", () => {
  const llama = { maxPositionEmbeddings: 8192, numLayers: 32, numKvHeads: 8, headDim: 128 };
  const caps = { maxBufferSize: 2 ** 31 - 1, maxStorageBufferBindingSize: 2 ** 31 - 1 };
  const k = chooseKvSize(llama, "f16", 16, caps, undefined, 700);
  equal(k.blocks, 700);
  equal(k.source, "memory");
  // Room for more than four contexts: four contexts, as before.
  equal(chooseKvSize(llama, "f16", 16, caps, undefined, 1e9).source, "context");
  // An explicit size is not cut by the budget here (the fit checked it fits).
  equal(chooseKvSize(llama, "f16", 16, caps, 4000, 700).blocks, 4000);
});

/** The fortune files, counting the bytes read from `model.safetensors`. */
function counting(): { files: ModelFiles; read: () => number } {
  const inner = dirFiles(FORTUNE);
  let read = 0;
  const files: ModelFiles = {
    location: inner.location,
    open: async (name) => {
      const src = await inner.open(name);
      if (!src || name !== "model.safetensors") return src;
      return {
        name: src.name,
        size: src.size,
        read: async (offset, length) => {
          const bytes = await src.read(offset, length);
          read += bytes.length;
          return bytes;
        },
      };
    },
  };
  return { files, read: () => read };
}

Deno.test("a model over the budget is refused from its headers, naming needed and available", async () => {
  const gpu = await testGpu();
  const { files, read } = counting();
  const checkpoint = await openCheckpoint(dirFiles(FORTUNE));
  const weights = weightBytes(weightList(checkpoint.weights));
  const budget = weights; // the weights alone fill it: scratch and KV cannot fit
  const e = new WebGpuEngine({ files, name: "fortune", gpu, gpuMemoryBytes: budget });
  await rejects(e.start(0n), (err: unknown) => {
    ok(err instanceof EngineError && err.type === "ResourceExhausted", String(err));
    match(err.message, new RegExp(`gpuMemoryBytes option allows ${budget}`));
    match(err.message, new RegExp(`weights ${weights},`));
    return true;
  });
  // Only the header was read, none of the ~9.6 MB of weights.
  const file = (await dirFiles(FORTUNE).open("model.safetensors"))!;
  ok(read() < file.size - weights + 64 * 1024, `${read()} bytes read`);
});

Deno.test("the default KV cache takes what the budget leaves after weights and scratch", async () => {
  const gpu = await testGpu();
  const checkpoint = await openCheckpoint(dirFiles(FORTUNE));
  const c = checkpoint.config;
  const fixed = weightBytes(weightList(checkpoint.weights)) + scratchBytes(c, STEPS);
  const perBlock = kvBlockBytes(c, "f16", 16); // fortune's cache is f16
  const blocks = 40; // fewer than one 1024-token context (64 blocks), more than 16 sequences
  const e = new WebGpuEngine({
    files: dirFiles(FORTUNE),
    name: "fortune",
    gpu,
    gpuMemoryBytes: fixed + blocks * perBlock + perBlock / 2,
  });
  const config = await e.start(0n);
  await e.cleanup();
  equal(config.total_kv_blocks, blocks);
  equal(config.runtime_data?.kv_blocks_source, "memory");
  equal(config.runtime_data?.gpu_memory_budget_source, "option");
  equal(config.runtime_data?.gpu_memory_left_for_kv_bytes, blocks * perBlock + perBlock / 2);
  equal(config.runtime_data?.kv_cache_bytes, blocks * perBlock);
  // Without the option (Deno has no navigator.deviceMemory): 4 GiB, room for four contexts.
  const roomy = new WebGpuEngine({ files: dirFiles(FORTUNE), name: "fortune", gpu });
  const r = await roomy.start(0n);
  await roomy.cleanup();
  equal(r.runtime_data?.gpu_memory_budget_bytes, DEFAULT_GPU_MEMORY_BYTES);
  equal(r.runtime_data?.kv_blocks_source, "context");
});

Deno.test("through the model store, a model that cannot fit is refused before its weights download", async () => {
  const gpu = await testGpu();
  const server = rangeServer(`${FORTUNE}/`);
  try {
    const storage = new MemoryStorage();
    const files = new ModelStore(storage, { backoffMs: 1, smallBytes: 1024 * 1024 }).files(
      server.base,
    );
    const size = (await dirFiles(FORTUNE).open("model.safetensors"))!.size;
    const e = new WebGpuEngine({ files, name: "fortune", gpu, gpuMemoryBytes: 1024 * 1024 });
    await rejects(e.start(0n), (err: unknown) => {
      ok(err instanceof EngineError && err.type === "ResourceExhausted", String(err));
      return true;
    });
    // (Files up to `smallBytes` are stored whole as they are read: 1 MiB keeps the weights out.)
    // The header went over the network; the ~9.6 MB of weights did not, and nothing of them is
    // stored (no entry, complete or partial, holds the weight file's bytes).
    const sent = server.bytesSent("model.safetensors");
    ok(sent < size / 4, `${sent} of ${size} bytes sent`);
    for (const [key, bytes] of storage.bytes) {
      ok(bytes.length < size / 4, `${key}: ${bytes.length} bytes stored`);
    }
  } finally {
    await server.shutdown();
  }
});
