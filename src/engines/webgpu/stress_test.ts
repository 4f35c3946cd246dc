import { equal, ok } from "node:assert/strict";
import { RequestContext } from "../../contract/engine.ts";
import type { KvCacheEvent } from "../../contract/kv_events.ts";
import type { LLMEngineOutput } from "../../contract/types.ts";
import { validateStream } from "../../contract/validate.ts";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { WebGpuEngine } from "./engine.ts";
import { testGpu } from "../../../test/support/gpu.ts";
import { MODELS } from "../../../test/support/models.ts";
import { seeded } from "../../../test/support/kernel_harness.ts";

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
  const r = seeded(7, 64 * 4);
  let cancelledSeen = 0;
  try {
    await Promise.all(Array.from({ length: 64 }, async (_, i) => {
      const promptLen = 1 + Math.floor(Math.abs(r[4 * i]!) * 40);
      const maxTokens = 1 + Math.floor(Math.abs(r[4 * i + 1]!) * 12);
      const cancelAfterMs = r[4 * i + 2]! > 0.4 ? Math.abs(r[4 * i + 3]!) * 300 : undefined;
      const prompt = [256, ...Array.from({ length: promptLen - 1 }, (_, j) => 97 + ((i + j) % 26))];
      const ctx = new RequestContext();
      if (cancelAfterMs !== undefined) setTimeout(() => ctx.stop(), cancelAfterMs);
      const chunks: LLMEngineOutput[] = [];
      const req = {
        model: "fortune",
        token_ids: prompt,
        stop_conditions: { max_tokens: maxTokens, ignore_eos: true },
        sampling_options: { temperature: 0.9, seed: i },
        output_options: {},
        eos_token_ids: [257],
        annotations: [],
      };
      for await (
        const c of validateStream(engine.generate(req, ctx), { promptTokens: prompt.length })
      ) chunks.push(c);
      const last = chunks.at(-1)!;
      if (last.finish_reason === "cancelled") cancelledSeen++;
      else {
        equal(last.finish_reason, "length");
        equal(chunks.reduce((n, c) => n + c.token_ids.length, 0), maxTokens);
      }
    }));
  } finally {
    await engine.drain();
  }
  equal(engine.usedBlocks, 0, "no KV block held after every request ended");
  const s = engine.stats;
  equal(s.started, 64);
  equal(s.finished + s.cancelled + s.failed, s.started);
  equal(s.cancelled, cancelledSeen);
  equal(s.failed, 0);
  ok(events.some((e) => e.type === "BlockStored"), "prefix blocks were published");
  await engine.cleanup();
});
