/**
 * Where the GPU memory of a started engine goes, for random-weight checkpoints of real shapes
 * (`checkpoint.ts`): the ledger's bytes by kind (`src/gpu/memory_ledger.ts`) after `start()`,
 * with the memory budget unbounded (the KV cache's four contexts, as before the budget) and
 * with the default budget, beside the fit's estimate from the headers.
 *
 *   deno run -A bench/engine/gpu_memory.ts [--shapes smollm2-135m,qwen2.5-0.5b] [--out F]
 */
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";
import { WebGpuEngine } from "../../src/engines/webgpu/engine.ts";
import { ensureCheckpoint } from "./checkpoint.ts";

const { flags } = runCli({
  name: "gpu_memory",
  command: "deno run -A bench/engine/gpu_memory.ts",
  about: "A started engine's GPU memory by kind for real shapes; prints JSON.",
  flags: {
    shapes: {
      type: "list",
      default: ["smollm2-135m", "qwen2.5-0.5b"],
      help: "bench/engine/shapes/",
    },
    out: { type: "string", arg: "FILE", help: "also write the JSON report here" },
  },
});

const results: Record<string, unknown> = {};
for (const shape of flags.shapes) {
  const dir = await ensureCheckpoint(shape, { log: (l) => console.error(l) });
  for (
    const [label, budget] of [["unbounded_budget", 1e15], ["default_budget", undefined]] as const
  ) {
    const e = new WebGpuEngine({
      files: dirFiles(dir),
      name: shape,
      ...(budget === undefined ? {} : { gpuMemoryBytes: budget }),
    });
    const rd = (await e.start(0n)).runtime_data!;
    results[`${shape}/${label}`] = {
      kv_blocks: rd.kv_blocks,
      kv_blocks_source: rd.kv_blocks_source,
      kv_cache_bytes: rd.kv_cache_bytes,
      budget_bytes: rd.gpu_memory_budget_bytes,
      estimate_bytes: rd.gpu_memory_estimate_bytes,
      left_for_kv_bytes: rd.gpu_memory_left_for_kv_bytes,
      ledger_bytes: rd.gpu_memory_bytes,
    };
    await e.cleanup();
  }
}
const report = {
  bench: "gpu_memory",
  date: new Date().toISOString(),
  note: "runtime_data after start() (warm-up included) on this adapter; scratch grows with the " +
    "first steps' token counts, up to the estimate's maxNumBatchedTokens (256).",
  results,
};
console.log(JSON.stringify(report, null, 2));
if (flags.out) await Deno.writeTextFile(flags.out, JSON.stringify(report, null, 2) + "\n");
