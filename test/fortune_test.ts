/** `npm run fortune`: a fortune streamed by the WebGPU engine, then metrics promtool accepts. */
import { equal, ok } from "node:assert/strict";
import { promtoolCheck } from "./support/promtool.ts";

Deno.test("npm run fortune streams a fortune from the engine and prints metrics promtool accepts", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../src/adapters/deno/fortune.ts", import.meta.url).pathname, "A "],
    env: { KILN_SEED: "11", KILN_MAX_TOKENS: "48" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const [story, metrics] = text.split("--- metrics (Prometheus text) ---");
  ok(story && /\(\d+ tokens in/.test(story), text);
  ok(story.trim().length > 10, "some text was generated");
  const load = metrics?.match(/^dynamo_component_model_load_time_seconds\{[^}]*\} (\S+)$/m);
  ok(load && Number(load[1]) > 0, "model load time is reported");
  ok(/^dynamo_component_total_blocks\{[^}]*dp_rank="0"\} 64$/m.test(metrics!), "KV gauges");
  ok(/^dynamo_frontend_requests_total\{[^}]*status="success"[^}]*\} 1$/m.test(metrics!));
  const check = await promtoolCheck(metrics!.trimStart());
  ok(check.ok, check.output);
});
