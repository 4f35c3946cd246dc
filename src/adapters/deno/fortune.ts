/**
 * `npm run fortune` (headless; `npm start` is the web demo): start a `WebGpuEngine` on the embedded fortune
 * model and the WebGPU adapter Deno finds, stream a sampled fortune to the terminal, drain and
 * clean up, then print the metrics a scraper would read (model load, drain and cleanup times,
 * KV cache gauges, request counters).
 */
import { RequestContext } from "../../contract/engine.ts";
import { WebGpuEngine } from "../../engines/webgpu/engine.ts";
import { engineMetrics, shutDown } from "../../metrics/engine_lifecycle.ts";
import { RequestMetrics } from "../../metrics/request_metrics.ts";
import { dirFiles } from "./file_source.ts";

const MODEL_DIR = new URL("../../../models/fortune/", import.meta.url).pathname;
const BOS = 256, EOS = 257;
const promptText = Deno.args[0] ?? "";
const seed = Number(Deno.env.get("KILN_SEED") ?? Date.now() % 1_000_000);

const engine = new WebGpuEngine({ files: dirFiles(MODEL_DIR), name: "fortune", kvBlocks: 64 });
const config = await engine.start(1n);
const metrics = await engineMetrics(
  engine,
  { namespace: "kiln", component: "start", endpoint: "generate", workerId: 1n },
  config,
  engine.modelLoadTime,
);
const requests = new RequestMetrics(metrics.registry);
console.error(
  `fortune on ${config.runtime_data?.adapter}: loaded in ${
    engine.modelLoadTime.toFixed(2)
  } s (seed ${seed})`,
);

const prompt = [BOS, ...new TextEncoder().encode(promptText)];
const tracker = requests.startRequest("fortune", prompt.length);
const decoder = new TextDecoder();
const write = (s: string) => Deno.stdout.write(new TextEncoder().encode(s));
await write(promptText);
let n = 0;
const tGen = performance.now();
const ctx = new RequestContext();
for await (
  const chunk of engine.generate({
    model: config.model,
    token_ids: prompt,
    stop_conditions: { max_tokens: Number(Deno.env.get("KILN_MAX_TOKENS") ?? 400) },
    sampling_options: { temperature: 0.8, top_p: 0.95, seed },
    output_options: {},
    eos_token_ids: [EOS],
    annotations: [],
  }, ctx)
) {
  const bytes = chunk.token_ids.filter((t) => t < 256);
  n += chunk.token_ids.length;
  if (chunk.token_ids.length > 0) tracker.tokens(chunk.token_ids.length);
  await write(decoder.decode(Uint8Array.from(bytes), { stream: true }));
  if (chunk.finish_reason) tracker.finish("success");
}
await write(decoder.decode());
const seconds = (performance.now() - tGen) / 1000;
console.log(`\n\n(${n} tokens in ${seconds.toFixed(2)} s, ${(n / seconds).toFixed(1)} tokens/s)`);
await shutDown(engine, metrics);
console.log("\n--- metrics (Prometheus text) ---");
console.log(metrics.render().body);
