/**
 * The load gauges routers scrape, from fortune's WebGPU engine: with room for 2 sequences and 5
 * requests at once, `vllm:num_requests_waiting` and `dynamo_component_inflight_requests` show the
 * queue while it lasts, blocks are active while requests run, and every gauge comes back to
 * idle values (0 running, 0 waiting, 0 active blocks, usage 0) once they end; both families
 * render in the Prometheus text with the labels routers select on.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { loadEngine, runLoad } from "../../test/support/router_load.ts";
import type { EngineLoad } from "./router_gauges.ts";

Deno.test("router gauges: the queue and the blocks while requests run, idle values after", async () => {
  const { e, metrics } = await loadEngine();
  const seen: EngineLoad[] = [];
  e.onGauges((v) => v.load && seen.push(v.load));
  try {
    await runLoad(e, metrics, (i) => `Request ${i} says, at some length:`, 12);
    ok(seen.some((l) => l.waiting >= 1), "requests waited for room");
    ok(seen.every((l) => l.running <= 2), "never more running than max_num_seqs");
    ok(seen.some((l) => l.activeBlocks > 0), "blocks were active");
    const last = seen.at(-1)!;
    equal(last.running + last.waiting + last.activeBlocks, 0, JSON.stringify(last));
    const text = metrics.render().body;
    const value = (name: string) => {
      const m = text.match(new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`, "m"));
      ok(m, `${name} in the scrape`);
      return { labels: m[1]!, value: Number(m[2]) };
    };
    equal(value("vllm:num_requests_running").value, 0);
    equal(value("vllm:num_requests_waiting").value, 0);
    equal(value("vllm:kv_cache_usage_perc").value, 0);
    equal(value("vllm:gpu_cache_usage_perc").value, 0);
    ok(value("vllm:num_requests_waiting").labels.includes('model_name="fortune"'));
    equal(value("dynamo_component_kvstats_total_blocks").value, 32);
    equal(value("dynamo_component_kvstats_active_blocks").value, 0);
    equal(value("dynamo_component_kvstats_gpu_cache_usage_percent").value, 0);
    equal(value("dynamo_component_inflight_requests").value, 0);
    ok(value("dynamo_component_kvstats_gpu_prefix_cache_hit_rate").value >= 0);
    ok(value("dynamo_component_kvstats_total_blocks").labels.includes('dynamo_namespace="ns"'));
  } finally {
    await e.cleanup();
  }
});
