import { ok, strictEqual as equal } from "node:assert/strict";
import type { KvCacheEvent } from "../../contract/kv_events.ts";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { WebGpuEngine } from "./engine.ts";
import { testGpu } from "../../../test/support/gpu.ts";
import { MODELS } from "../../../test/support/models.ts";
import { soak } from "../../../test/support/soak.ts";

const fortune = MODELS.find((m) => m.name === "fortune")!.dir.pathname;

Deno.test("64 concurrent requests with random lengths and cancellations all end correctly; nothing leaks", async () => {
  const gpu = await testGpu();
  // A small cache (24 blocks of 16) so requests also wait for blocks and get preempted.
  const engine = new WebGpuEngine({
    files: dirFiles(fortune),
    name: "fortune",
    gpu,
    kvBlocks: 24,
    maxNumSeqs: 16,
    maxNumBatchedTokens: 64,
  });
  await engine.start(0n);
  const events: KvCacheEvent[] = [];
  const [source] = await engine.kvEventSources();
  if (source?.kind === "push") source.onReady({ publish: (e) => events.push(e) });
  const result = await soak(engine, 64, 64);
  equal(engine.stats.started, 64);
  equal(engine.stats.cancelled, result.cancelled);
  ok(events.some((e) => e.type === "BlockStored"), "prefix blocks were published");
  await engine.cleanup();
});
