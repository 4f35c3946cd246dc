import { dirFiles } from "./src/adapters/deno/file_source.ts";
import { OrtEngine } from "./src/engines/ort/engine.ts";
import { RequestContext } from "./src/contract/engine.ts";
const variant = Deno.args[0] ?? "model";
const e = new OrtEngine({ files: dirFiles("/work/shared/fixtures/onnx/fortune"), name: "f", variant, executionProvider: (Deno.args[1] ?? "webgpu") as "webgpu" });
let t = performance.now();
await e.start(0n);
console.log("start", (performance.now() - t).toFixed(0));
for (let rep = 0; rep < 2; rep++) {
  t = performance.now();
  const times: number[] = [];
  for await (const c of e.generate({ model: "f", token_ids: [256, 72, 101, 108], stop_conditions: { max_tokens: 24 }, sampling_options: { temperature: 0 }, output_options: {}, eos_token_ids: [], annotations: [] }, new RequestContext())) {
    times.push(performance.now() - t); t = performance.now();
  }
  console.log(times.map((x) => x.toFixed(0)).join(" "));
}
await e.cleanup();
