/**
 * The soak: rounds of concurrent requests (random lengths; 60% get a cancel at a random moment in
 * their first 300 ms, which ends those still running)
 * against one engine; after every round nothing is held and the counters balance, and the heap
 * after the last round is within a bound of the heap after the first. 400 requests in `npm test`;
 * `KILN_SOAK_REQUESTS=2000` (`deno task soak`) for the full run.
 */
import { equal, ok } from "node:assert/strict";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { WebGpuEngine } from "./engine.ts";
import { testGpu } from "../../../test/support/gpu.ts";
import { MODELS } from "../../../test/support/models.ts";
import { soak } from "../../../test/support/soak.ts";

const fortune = MODELS.find((m) => m.name === "fortune")!.dir.pathname;
const TOTAL = Number(Deno.env.get("KILN_SOAK_REQUESTS") ?? 400);
const ROUNDS = 4;

Deno.test(`soak: ${TOTAL} requests in ${ROUNDS} rounds; no blocks held, counters balance, heap bounded`, async () => {
  const gpu = await testGpu();
  const engine = new WebGpuEngine({
    files: dirFiles(fortune),
    name: "fortune",
    gpu,
    kvBlocks: 48,
    maxNumSeqs: 16,
    maxNumBatchedTokens: 128,
  });
  await engine.start(0n);
  const heap: number[] = [];
  let cancelled = 0, tokens = 0;
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const last = round === ROUNDS - 1;
      const r = await soak(engine, TOTAL / ROUNDS, 16, 100 + round, last);
      cancelled += r.cancelled;
      tokens += r.tokens;
      heap.push(Deno.memoryUsage().heapUsed);
    }
    equal(engine.stats.started, TOTAL);
    equal(engine.stats.cancelled, cancelled);
    ok(cancelled > 0 && cancelled < TOTAL, `${cancelled} of ${TOTAL} cancelled`);
    const growth = heap.at(-1)! - heap[0]!;
    console.log(
      `  soak: ${TOTAL} requests, ${cancelled} cancelled, ${tokens} tokens; heap after each round ${
        heap.map((h) => (h / 2 ** 20).toFixed(1)).join(", ")
      } MiB`,
    );
    ok(growth < 32 * 2 ** 20, `heap grew ${(growth / 2 ** 20).toFixed(1)} MiB over the rounds`);
  } finally {
    await engine.cleanup();
  }
});
