import { ok, strictEqual as equal } from "node:assert/strict";
import { MockEngine } from "../engines/mock/mod.ts";
import { engineMetrics, shutDown } from "./engine_lifecycle.ts";
import { testHierarchy } from "../contract/metrics/engine_metrics.ts";

const sample = (text: string, name: string) =>
  Number(text.split("\n").find((l) => l.startsWith(`dynamo_component_${name}{`))?.split(" ").pop());

Deno.test("engineMetrics registers the engine with its load time; shutDown records drain and cleanup", async () => {
  const engine = new MockEngine();
  const config = await engine.start(1n);
  const metrics = await engineMetrics(engine, testHierarchy(), config, 1.25);
  const before = metrics.render().body;
  equal(sample(before, "model_load_time_seconds"), 1.25);
  ok(before.includes("dynamo_component_total_blocks{"), "the engine's gauges are registered");
  await shutDown(engine, metrics);
  const after = metrics.render().body;
  ok(sample(after, "drain_time_seconds") >= 0, after);
  ok(sample(after, "cleanup_time_seconds") >= 0, after);
});

Deno.test("shutDown's drain time runs from its call to the end of the host's requests", async () => {
  const engine = new MockEngine();
  const config = await engine.start(1n);
  const metrics = await engineMetrics(engine, testHierarchy(), config, 0);
  // The host's requests are over 150 ms after its drain begins, within shutDown.
  let held = 0;
  await shutDown(engine, metrics, async () => {
    const begun = performance.now();
    await new Promise((r) => setTimeout(r, 150));
    held = (performance.now() - begun) / 1000;
  });
  const drain = sample(metrics.render().body, "drain_time_seconds");
  ok(held >= 0.1 && drain >= held && drain < 5, `drain ${drain} s, requests held ${held} s`);
});
