/**
 * The soak: rounds of concurrent requests against one engine (random lengths; 60% get a cancel
 * at a random moment in their first 300 ms, which ends those still running). After every round nothing is held and the counters balance, the heap after
 * the last round is within a bound of the heap after the first, and live GPU buffers stop growing
 * once the step shapes' plans are built. 400 requests in `npm test`;
 * `KILN_SOAK_REQUESTS=2000` (`deno task soak`) for the full run.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { parseEnv } from "../../adapters/deno/flags.ts";
import { testGpu } from "../../../test/support/gpu.ts";
import { fortuneEngine } from "../../../test/support/fortune_engine.ts";
import { soak } from "../../../test/support/soak.ts";

/**
 * Live GPU buffers on `device` from now on (created minus destroyed), counted by wrapping
 * `createBuffer`: WebGPU itself cannot list them.
 */
function countLiveBuffers(device: GPUDevice): () => number {
  let live = 0;
  const create = device.createBuffer.bind(device);
  device.createBuffer = (desc: GPUBufferDescriptor) => {
    const b = create(desc);
    live++;
    const destroy = b.destroy.bind(b);
    let gone = false;
    b.destroy = () => {
      if (!gone) live--;
      gone = true;
      destroy();
    };
    return b;
  };
  return () => live;
}

const TOTAL = parseEnv({
  KILN_SOAK_REQUESTS: {
    type: "integer",
    min: 1,
    default: 400,
    help: "requests in all (deno task soak: 2000)",
  },
}).KILN_SOAK_REQUESTS;
const ROUNDS = 4;
if (TOTAL % ROUNDS !== 0) {
  throw new Error(`KILN_SOAK_REQUESTS: expected a multiple of ${ROUNDS}, got ${TOTAL}`);
}

Deno.test(`soak: ${TOTAL} requests in ${ROUNDS} rounds; no blocks held, counters balance, heap bounded`, async () => {
  const gpu = await testGpu();
  const live = countLiveBuffers(gpu.device);
  const engine = await fortuneEngine({ kvBlocks: 48, maxNumSeqs: 16, maxNumBatchedTokens: 128 });
  await engine.start(0n);
  const heap: number[] = [];
  const buffers: number[] = [];
  let cancelled = 0, tokens = 0;
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const last = round === ROUNDS - 1;
      const r = await soak(engine, TOTAL / ROUNDS, 16, 100 + round, last);
      cancelled += r.cancelled;
      tokens += r.tokens;
      heap.push(Deno.memoryUsage().heapUsed);
      buffers.push(live());
    }
    equal(engine.stats.started, TOTAL);
    equal(engine.stats.cancelled, cancelled);
    ok(cancelled > 0 && cancelled < TOTAL, `${cancelled} of ${TOTAL} cancelled`);
    const growth = heap.at(-1)! - heap[0]!;
    console.log(
      `  soak: ${TOTAL} requests, ${cancelled} cancelled, ${tokens} tokens; heap after each round ${
        heap.map((h) => (h / 2 ** 20).toFixed(1)).join(", ")
      } MiB; live GPU buffers ${buffers.join(", ")}`,
    );
    ok(growth < 32 * 2 ** 20, `heap grew ${(growth / 2 ** 20).toFixed(1)} MiB over the rounds`);
    // Round 1 and 2 build plans for new step shapes (their uniforms are buffers); after that a
    // leak of one buffer per request would add 2 * TOTAL / ROUNDS over the last two rounds.
    const late = buffers.at(-1)! - buffers[1]!;
    ok(late < TOTAL / ROUNDS, `${late} GPU buffers more after the last two rounds`);
  } finally {
    await engine.cleanup();
  }
});
