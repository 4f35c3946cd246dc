/**
 * `npm start` (headless, until the demo lands): load the embedded fortune model on the WebGPU
 * adapter Deno finds, stream a sampled fortune to the terminal, then print the metrics a
 * scraper would read.
 */
import { acquireGpu } from "../../gpu/device.ts";
import { GpuModel } from "../../model/gpu_model.ts";
import { generateTokens } from "../../model/generate.ts";
import { EngineMetrics } from "../../metrics/engine_metrics.ts";
import { RequestMetrics } from "../../metrics/request_metrics.ts";
import { dirFiles } from "./file_source.ts";

const MODEL_DIR = new URL("../../../models/fortune/", import.meta.url).pathname;
const BOS = 256, EOS = 257;
const promptText = Deno.args[0] ?? "";
const seed = Number(Deno.env.get("KILN_SEED") ?? Date.now() % 1_000_000);

const t0 = performance.now();
const gpu = await acquireGpu({ label: "kiln-start" });
const model = await GpuModel.load(gpu, dirFiles(MODEL_DIR), { kvBlocks: 64 });
const loadSeconds = (performance.now() - t0) / 1000;
const metrics = EngineMetrics.fromHierarchy(
  { namespace: "kiln", component: "start", endpoint: "generate", workerId: 1n },
  { model: "fortune" },
);
metrics.lifecycle.setModelLoadTime(loadSeconds);
const requests = new RequestMetrics(metrics.registry);
console.error(
  `fortune on ${gpu.caps.adapter}: loaded in ${loadSeconds.toFixed(2)} s (seed ${seed})`,
);

const prompt = [BOS, ...new TextEncoder().encode(promptText)];
const tracker = requests.startRequest("fortune", prompt.length);
const out = new Uint8Array(1024);
let n = 0;
await Deno.stdout.write(new TextEncoder().encode(promptText));
const tGen = performance.now();
for await (
  const { token } of generateTokens(model, prompt, {
    maxTokens: 400,
    temperature: 0.8,
    top_p: 0.95,
    seed,
    stopTokens: [EOS],
  })
) {
  tracker.tokens();
  if (token < 256) {
    out[n++] = token;
    await Deno.stdout.write(Uint8Array.of(token));
  }
}
tracker.finish("success");
const seconds = (performance.now() - tGen) / 1000;
console.log(`\n\n(${n} bytes in ${seconds.toFixed(2)} s, ${(n / seconds).toFixed(1)} tokens/s)`);
model.destroy();
console.log("\n--- metrics (Prometheus text) ---");
console.log(metrics.render().body);
