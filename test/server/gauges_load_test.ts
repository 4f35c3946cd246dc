/**
 * Router gauges scraped under load, not only at idle: a held engine (`HeldEngine`, room for 2
 * requests) is driven over HTTP by streamed chat requests and held in known states (2 running
 * and 3 waiting, 2 and 1, 1 and 0, idle). At each one `/metrics` is scraped over HTTP and
 * `vllm:num_requests_running` / `_waiting`, `dynamo_component_inflight_requests`, the KV gauges
 * and `dynamo_frontend_inflight_requests` must equal the scheduler's own queues and blocks, and
 * the test's own count of streams still open. The planted error: gauges that swap running and
 * waiting, run through the very same check, must be rejected.
 */
import { rejects, strictEqual as equal } from "node:assert/strict";
import { specFiles } from "../../src/adapters/deno/file_source.ts";
import { EngineMetrics } from "../../src/contract/metrics/engine_metrics.ts";
import { RequestMetrics } from "../../src/metrics/request_metrics.ts";
import { type LoadReport, RouterGauges } from "../../src/metrics/router_gauges.ts";
import { KilnServer } from "../../src/server/app.ts";
import { loadText } from "../../src/text/load.ts";
import { HeldEngine, type HeldEngineOptions } from "../support/held_engine.ts";
import { scrapeValue } from "../support/scrape.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;
const TOTAL_BLOCKS = 40, BLOCKS_PER = 3;

/** The planted error: running and waiting swapped on their way to the gauges. */
class SwappedGauges extends RouterGauges {
  override report(r: LoadReport): void {
    super.report({ ...r, load: { ...r.load, running: r.load.waiting, waiting: r.load.running } });
  }
}

/** A scrape compared with the scheduler's queues and blocks, and with the streams open. */
function checkScrape(text: string, engine: HeldEngine, open: number): void {
  const v = (name: string) => scrapeValue(text, name);
  const running = engine.running.length, waiting = engine.waiting.length;
  const at = `at running ${running}, waiting ${waiting}`;
  equal(v("vllm:num_requests_running"), running, `vllm running ${at}`);
  equal(v("vllm:num_requests_waiting"), waiting, `vllm waiting ${at}`);
  equal(v("dynamo_component_inflight_requests"), running + waiting, `dynamo inflight ${at}`);
  equal(v("dynamo_component_kvstats_active_blocks"), running * BLOCKS_PER, `active blocks ${at}`);
  equal(v("dynamo_component_kvstats_total_blocks"), TOTAL_BLOCKS);
  const usage = (running * BLOCKS_PER) / TOTAL_BLOCKS;
  equal(v("vllm:kv_cache_usage_perc"), usage, `kv usage ${at}`);
  equal(v("dynamo_component_kvstats_gpu_cache_usage_percent"), usage, `kv usage ${at}`);
  equal(v("dynamo_frontend_inflight_requests"), open, `frontend inflight ${at}`);
}

/** Drive five streams through the states, scraping and checking at each. */
async function underLoad(gauges?: HeldEngineOptions["gauges"]): Promise<void> {
  const engine = new HeldEngine({
    maxNumSeqs: 2,
    totalBlocks: TOTAL_BLOCKS,
    blocksPer: BLOCKS_PER,
    ...(gauges ? { gauges } : {}),
  });
  const config = await engine.start(1n);
  const metrics = EngineMetrics.fromHierarchy(
    { namespace: "ns", component: "kiln", endpoint: "generate", workerId: 1n },
    config,
  );
  await engine.setupMetrics({
    model: "fortune",
    component: "kiln",
    model_load_time_seconds: 0,
    metrics,
  });
  const server = new KilnServer({ engine, metrics, requests: new RequestMetrics() });
  server.ready(config, await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" })));
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, server.fetch);
  const base = `http://127.0.0.1:${http.addr.port}`;
  const scrape = async () => await (await fetch(`${base}/metrics`)).text();
  // The replies' headers come with their first token: a waiting request's only once it runs.
  const streams = [0, 1, 2, 3, 4].map((i) =>
    fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "fortune",
        messages: [{ role: "user", content: `request ${i}` }],
        stream: true,
      }),
    })
  );
  try {
    let open = 5;
    await engine.until(2, 3);
    checkScrape(await scrape(), engine, open);
    // Each step: release the oldest running streams, read them to their end, scrape.
    for (const [n, running, waiting] of [[2, 2, 1], [2, 1, 0], [1, 0, 0]] as const) {
      engine.release(n);
      for (const r of streams.splice(0, n)) await (await r).text();
      open -= n;
      await engine.until(running, waiting);
      checkScrape(await scrape(), engine, open);
    }
  } finally {
    await engine.cleanup();
    await Promise.allSettled(streams.map(async (r) => await (await r).body?.cancel()));
    server.abortAll();
    await http.shutdown();
  }
}

Deno.test("router gauges under load equal the scheduler's running, waiting and blocks", async () => {
  await underLoad();
});

Deno.test("planted error: gauges with running and waiting swapped are rejected under load", async () => {
  await rejects(underLoad((m) => new SwappedGauges(m)), /vllm running at running 2, waiting 3/);
});
