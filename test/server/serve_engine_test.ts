/**
 * `serve`'s token-level engine endpoint through the worker: `GET /v1/engine/config` is the
 * worker engine's `EngineConfig`, and `POST /v1/engine/generate` streams greedy NDJSON chunks
 * whose tokens are the ones `/v1/completions` returns as text for the same prompt; the load
 * gauges routers scrape reach `/metrics` through the worker.
 */
import { deepStrictEqual, match, strictEqual as equal } from "node:assert/strict";
import { parseOutput } from "../../src/contract/wire.ts";
import { startServer } from "./server.ts";

Deno.test("serve: /v1/engine/config and /v1/engine/generate through the worker", async () => {
  const s = await startServer();
  try {
    const config = await (await fetch(`${s.url}/v1/engine/config`)).json();
    equal(config.model, "fortune");
    equal(typeof config.total_kv_blocks, "number");
    const prompt = "The fortune says";
    const res = await fetch(`${s.url}/v1/engine/generate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        token_ids: [256, ...new TextEncoder().encode(prompt)],
        stop_conditions: { max_tokens: 16, ignore_eos: true },
        sampling_options: { temperature: 0 },
      }),
    });
    equal(res.status, 200);
    const chunks = (await res.text()).trimEnd().split("\n").map((l) => parseOutput(l));
    equal(chunks.at(-1)!.finish_reason, "length");
    equal(chunks.filter((c) => c.finish_reason !== undefined).length, 1);
    const ids = chunks.flatMap((c) => c.token_ids);
    equal(ids.length, 16);
    const text = await fetch(`${s.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "fortune",
        prompt,
        max_tokens: 16,
        temperature: 0,
        ignore_eos: true,
      }),
    });
    const body = await text.json();
    equal(text.status, 200, JSON.stringify(body));
    const want = body.choices[0].text;
    deepStrictEqual(new TextDecoder().decode(new Uint8Array(ids.filter((t) => t < 256))), want);
    // The load gauges routers scrape reach /metrics through the worker, idle now.
    const scrape = await (await fetch(`${s.url}/metrics`)).text();
    for (const name of ["vllm:num_requests_running", "vllm:num_requests_waiting"]) {
      match(scrape, new RegExp(`^${name}\\{model_name="fortune"\\} 0$`, "m"));
    }
    match(scrape, /^dynamo_component_kvstats_total_blocks\{[^}]*\} \d+$/m);
    match(scrape, /^dynamo_component_kvstats_active_blocks\{[^}]*\} 0$/m);
  } finally {
    await s.stop();
  }
});
