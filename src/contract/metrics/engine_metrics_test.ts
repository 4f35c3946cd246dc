import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../errors.ts";
import { EngineMetrics, modelLabels, testHierarchy } from "./engine_metrics.ts";
import { RequestMetrics } from "../../metrics/request_metrics.ts";
import { promtoolCheck } from "../../../test/support/promtool.ts";
import { type ParsedFamily, parseFamilies } from "../../../test/support/scrape.ts";

let lastBody = "";

async function scrape(
  m: EngineMetrics,
  ...extra: RequestMetrics[]
): Promise<Map<string, ParsedFamily>> {
  const { body, contentType } = m.render(null, extra.map((r) => r.registry));
  equal(contentType, "text/plain; version=0.0.4; charset=utf-8");
  const check = await promtoolCheck(body);
  ok(check.ok, `${check.output}\n${body}`);
  lastBody = body;
  return new Map(parseFamilies(body).map((f) => [f.name, f]));
}

/** The value of one sample line of the last scrape (the parser drops labelled _sum/_count). */
function sampleValue(series: string): number {
  const line = lastBody.split("\n").find((l) => l.startsWith(`${series} `));
  ok(line, `${series} not in the scrape`);
  return Number(line.slice(series.length + 1));
}

const HIERARCHY = {
  namespace: "dynamo",
  component: "backend",
  endpoint: "generate",
  workerId: 0x694d9a1c2e3b4f5an,
};

Deno.test("lifecycle gauges carry each hierarchy label once, plus the model labels (regression)", async () => {
  const m = EngineMetrics.fromHierarchy(HIERARCHY, {
    model: "/models/qwen",
    served_model_name: "qwen",
  });
  m.lifecycle.setCleanupTime(0.25);
  m.lifecycle.setDrainTime(1.5);
  m.lifecycle.setModelLoadTime(3);
  const families = await scrape(m);
  for (
    const [name, value] of [
      ["dynamo_component_cleanup_time_seconds", 0.25],
      ["dynamo_component_drain_time_seconds", 1.5],
      ["dynamo_component_model_load_time_seconds", 3],
    ] as const
  ) {
    const f = families.get(name);
    ok(f, `${name} missing`);
    equal(f.metrics.length, 1);
    equal(Number(f.metrics[0]!.value), value);
    deepStrictEqual(f.metrics[0]!.labels, {
      dynamo_namespace: "dynamo",
      dynamo_component: "backend",
      dynamo_endpoint: "generate",
      worker_id: "694d9a1c2e3b4f5a",
      model: "/models/qwen",
      model_name: "qwen",
    });
  }
});

Deno.test("a label that collides with an auto-injected hierarchy label is refused", () => {
  const m = EngineMetrics.fromHierarchy(HIERARCHY);
  throws(
    () => m.gauge("x", "help", { dynamo_namespace: "again" }),
    (e: unknown) =>
      e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes("collides"),
  );
  throws(() => m.gauge("y", "help", {}, ["worker_id"]), /collides/);
});

Deno.test("served_model_name wins for model_name; empty strings emit no label", () => {
  deepStrictEqual(modelLabels({ model: "/local/path/qwen", served_model_name: "qwen3-0.6b" }), {
    model: "/local/path/qwen",
    model_name: "qwen3-0.6b",
  });
  deepStrictEqual(modelLabels({ model: "m" }), { model: "m", model_name: "m" });
  deepStrictEqual(modelLabels({ model: "", served_model_name: "" }), {});
  deepStrictEqual(modelLabels(), {});
  const m = EngineMetrics.fromHierarchy(testHierarchy());
  deepStrictEqual(m.model, {});
  equal(m.injected.worker_id, "1234abcd", "worker id renders in lowercase hex");
});

Deno.test("component gauges per dp_rank; kv hit rate stays absent until real data", async () => {
  const m = EngineMetrics.fromHierarchy(HIERARCHY, { model: "m" });
  const r0 = m.componentGauges(0);
  equal(m.componentGauges(0), r0, "same object for the same rank");
  r0.setTotalBlocks(512);
  r0.setGpuCacheUsagePercent(0.25);
  r0.setKvCacheHitRate(undefined);
  m.componentGauges(1).setTotalBlocks(256);
  let families = await scrape(m);
  const total = families.get("dynamo_component_total_blocks")!;
  deepStrictEqual(
    total.metrics.map((s) => [s.labels!.dp_rank, Number(s.value), s.labels!.model]),
    [["0", 512, "m"], ["1", 256, "m"]],
  );
  equal(Number(families.get("dynamo_component_gpu_cache_usage_percent")!.metrics[0]!.value), 0.25);
  const hit = families.get("dynamo_component_kv_cache_hit_rate");
  ok(hit === undefined || hit.metrics.length === 0, "no data means no series");
  r0.setKvCacheHitRate(0.75);
  r0.setKvCacheHitRate(undefined); // no data: keeps the last real value
  families = await scrape(m);
  deepStrictEqual(
    families.get("dynamo_component_kv_cache_hit_rate")!.metrics.map((
      s,
    ) => [s.labels!.dp_rank, Number(s.value)]),
    [["0", 0.75]],
  );
});

Deno.test("addExpfmtCallback text appears in the combined scrape", async () => {
  const m = EngineMetrics.fromHierarchy(testHierarchy());
  m.addExpfmtCallback(() =>
    "# HELP engine_native_steps_total Steps.\n# TYPE engine_native_steps_total counter\nengine_native_steps_total 42\n"
  );
  const families = await scrape(m);
  equal(Number(families.get("engine_native_steps_total")?.metrics[0]?.value), 42);
});

Deno.test("request metrics: counters by status, in-flight, TTFT, ITL, duration and lengths", async () => {
  let t = 0;
  const clock = () => t;
  const req = new RequestMetrics();
  const a = req.startRequest("fortune", 12, clock);
  const b = req.startRequest("fortune", 3, clock);
  t = 50;
  a.tokens(); // TTFT 50 ms
  t = 70;
  a.tokens(); // ITL 20 ms
  t = 100;
  a.tokens(2); // ITL 15 ms per token
  a.finish("success");
  a.finish("error"); // ignored: already finished
  t = 400;
  b.finish("error", "InvalidArgument");
  const families = await scrape(EngineMetrics.fromHierarchy(testHierarchy()), req);
  const requests = families.get("dynamo_frontend_requests_total")!;
  deepStrictEqual(
    requests.metrics.map((s) => [s.labels!.status, s.labels!.error_type, Number(s.value)]),
    [["success", "", 1], ["error", "InvalidArgument", 1]],
  );
  equal(Number(families.get("dynamo_frontend_inflight_requests")!.metrics[0]!.value), 0);
  const m = '{model="fortune"}';
  equal(
    families.get("dynamo_frontend_time_to_first_token_seconds")!.metrics[0]!.buckets!["0.05"],
    "1",
  );
  equal(sampleValue(`dynamo_frontend_time_to_first_token_seconds_count${m}`), 1);
  equal(sampleValue(`dynamo_frontend_time_to_first_token_seconds_sum${m}`), 0.05);
  const itl = families.get("dynamo_frontend_inter_token_latency_seconds")!.metrics[0]!;
  deepStrictEqual([itl.buckets!["0.015"], itl.buckets!["0.02"], itl.buckets!["+Inf"]], [
    "1",
    "2",
    "2",
  ]);
  ok(Math.abs(sampleValue(`dynamo_frontend_inter_token_latency_seconds_sum${m}`) - 0.035) < 1e-12);
  equal(sampleValue(`dynamo_frontend_output_sequence_tokens_count${m}`), 2);
  equal(sampleValue(`dynamo_frontend_output_sequence_tokens_sum${m}`), 4);
  equal(sampleValue(`dynamo_frontend_input_sequence_tokens_sum${m}`), 15);
  equal(sampleValue(`dynamo_frontend_request_duration_seconds_sum${m}`), 0.1 + 0.4);
  equal(
    families.get("dynamo_frontend_request_duration_seconds")!.metrics[0]!.buckets!["+Inf"],
    "2",
  );
});
