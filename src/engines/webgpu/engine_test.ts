import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { formatReport, runConformanceReport } from "../../conformance/kit.ts";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { WebGpuEngine } from "./engine.ts";
import { checkStopsUsageAndBadInput } from "../../../test/support/engine_checks.ts";
import { checkCancellation, gaugeReports } from "../../../test/support/cancel_checks.ts";
import {
  bytes,
  collect,
  FORTUNE as fortune,
  fortuneEngine as engine,
  request,
} from "../../../test/support/fortune_engine.ts";

Deno.test("WebGpuEngine passes the conformance kit on the fortune model (Deno, lavapipe)", async () => {
  // 16 blocks (256 tokens): kv_cache_overload processes more tokens than the cache holds.
  const report = await runConformanceReport(() =>
    new WebGpuEngine({ files: dirFiles(fortune), name: "fortune", kvBlocks: 16 })
  );
  ok(report.passed, formatReport(report));
});

Deno.test("batched and unbatched greedy decoding agree; a prefix-cache hit changes nothing", async () => {
  const e = await engine({ maxNumBatchedTokens: 24 });
  await e.start(0n);
  try {
    const prompts = [bytes("The quick brown fox jumps over"), bytes("Love"), bytes("You will be")];
    const alone = [];
    for (const p of prompts) alone.push((await collect(e, request(p))).ids);
    const together = await Promise.all(prompts.map((p) => collect(e, request(p))));
    deepStrictEqual(together.map((r) => r.ids), alone);
    // The first prompt's full blocks are cached now; running it again must hit and agree.
    const again = await collect(e, request(prompts[0]!));
    deepStrictEqual(again.ids, alone[0]);
    equal(e.usedBlocks, 0);
  } finally {
    await e.cleanup();
  }
});

Deno.test("stop conditions, usage, logprobs and bad input on the GPU engine", async () => {
  const e = await engine();
  await checkStopsUsageAndBadInput(e);
});

Deno.test("cancellation: a pre-aborted signal, consumers that break, KV free within one step", async () => {
  const e = await engine({ maxNumSeqs: 4 });
  await e.start(0n);
  try {
    const gauges = gaugeReports(e);
    await checkCancellation(e, {
      used: () => e.usedBlocks,
      steps: () => e.steps.submitted,
      stats: () => ({ ...e.stats }),
      nextReport: gauges.nextReport,
    });
    equal(gauges.usage(), 0, "the KV gauge reports the freed blocks");
  } finally {
    await e.cleanup();
  }
});
