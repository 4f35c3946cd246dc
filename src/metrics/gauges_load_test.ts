/**
 * The router gauges of fortune's WebGPU engine scraped under load: with room for 2 sequences and
 * 5 requests at once, the Prometheus text is rendered at every report, in the very moment the
 * scheduler's queues were counted, and `vllm:num_requests_running` / `_waiting`,
 * `dynamo_component_inflight_requests` and the KV gauges must equal the scheduler's counts and
 * the block manager's blocks then; and at least one such scrape must show 2 running and 3
 * waiting (never more running than `max_num_seqs`), so a swap of the two cannot pass.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { loadEngine, runLoad } from "../../test/support/router_load.ts";
import { scrapeValue } from "../../test/support/scrape.ts";

Deno.test("router gauges scraped under load equal the WebGPU scheduler's counts", async () => {
  const { e, metrics } = await loadEngine();
  const scrapes: { running: number; waiting: number }[] = [];
  let checked = 0, failure: unknown;
  const check = (load: { running: number; waiting: number }) => {
    const text = metrics.render().body;
    if (!text.includes("vllm:num_requests_running{")) return; // before setupMetrics binds them
    const at = `at ${JSON.stringify(load)}`;
    const value = (name: string) => scrapeValue(text, name);
    const running = value("vllm:num_requests_running");
    const waiting = value("vllm:num_requests_waiting");
    equal(running, load.running, `running ${at}`);
    equal(waiting, load.waiting, `waiting ${at}`);
    equal(value("dynamo_component_inflight_requests"), running + waiting, at);
    equal(value("dynamo_component_kvstats_active_blocks"), e.usedBlocks, at);
    equal(value("vllm:kv_cache_usage_perc"), e.usedBlocks / e.totalBlocks, at);
    ok(running <= 2, `never more running than max_num_seqs ${at}`);
    scrapes.push({ running, waiting });
    checked++;
  };
  e.onGauges((v) => {
    if (!v.load || failure !== undefined) return;
    try {
      check(v.load);
    } catch (err) {
      failure = err; // thrown here it would fail the engine's step loop, not this test
    }
  });
  try {
    await runLoad(e, metrics, (i) => `Request ${i}:`, 6);
    if (failure !== undefined) throw failure;
    ok(checked > 0, "scrapes were taken under load");
    ok(scrapes.some((s) => s.running === 2 && s.waiting === 3), JSON.stringify(scrapes));
    equal(e.usedBlocks, 0);
  } finally {
    await e.cleanup();
  }
});
