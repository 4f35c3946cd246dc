/**
 * `npm start`: run an engine end to end and print a streamed completion, then the metrics a
 * scraper would read. (The mock engine until the WebGPU engine lands.)
 */
import { RequestContext } from "../../contract/engine.ts";
import type { PreprocessedRequest } from "../../contract/types.ts";
import { validateStream } from "../../contract/validate.ts";
import { MockEngine } from "../../engines/mock/mock_engine.ts";
import { EngineMetrics } from "../../metrics/engine_metrics.ts";
import { RequestMetrics } from "../../metrics/request_metrics.ts";

const engine = new MockEngine({ delayMs: 20 });
const t0 = performance.now();
const config = await engine.start(1n);
const metrics = EngineMetrics.fromHierarchy(
  { namespace: "kiln", component: "mock", endpoint: "generate", workerId: 1n },
  config,
);
metrics.lifecycle.setModelLoadTime((performance.now() - t0) / 1000);
await engine.setupMetrics({
  model: config.model,
  component: "mock",
  model_load_time_seconds: 0,
  metrics,
});
const requests = new RequestMetrics(metrics.registry);

const request: PreprocessedRequest = {
  model: config.model,
  token_ids: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17],
  stop_conditions: { max_tokens: 24 },
  sampling_options: {},
  output_options: {},
  eos_token_ids: [],
  annotations: [],
};
console.log(
  `engine: ${config.model} (context ${config.context_length}, ${config.total_kv_blocks} KV blocks)`,
);
console.log(`prompt: ${JSON.stringify(request.token_ids)}`);
const tracker = requests.startRequest(config.model, request.token_ids.length);
const ctx = new RequestContext();
const enc = new TextEncoder();
await Deno.stdout.write(enc.encode("tokens:"));
for await (
  const chunk of validateStream(engine.generate(request, ctx), {
    promptTokens: request.token_ids.length,
  })
) {
  if (chunk.token_ids.length > 0) {
    tracker.tokens(chunk.token_ids.length);
    await Deno.stdout.write(enc.encode(` ${chunk.token_ids.join(" ")}`));
  }
  if (chunk.finish_reason !== undefined) {
    tracker.finish("success");
    console.log(
      `\nfinish: ${JSON.stringify(chunk.finish_reason)} usage: ${
        JSON.stringify(chunk.completion_usage)
      }`,
    );
  }
}
const t1 = performance.now();
await engine.drain();
metrics.lifecycle.setDrainTime((performance.now() - t1) / 1000);
const t2 = performance.now();
await engine.cleanup();
metrics.lifecycle.setCleanupTime((performance.now() - t2) / 1000);
console.log("\n--- metrics (Prometheus text) ---");
console.log(metrics.render().body);
