/**
 * Decode throughput of `WebGpuEngine` on a checkpoint: tokens/s for 1 stream and for N
 * concurrent streams (greedy, `ignore_eos`), prefill excluded by timing from the first token.
 *
 *   deno run -A bench/engine.ts [--model models/fortune] [--tokens 128] [--streams 8] [--out FILE]
 */
import { RequestContext } from "../src/contract/engine.ts";
import type { PreprocessedRequest } from "../src/contract/types.ts";
import { WebGpuEngine } from "../src/engines/webgpu/engine.ts";
import { dirFiles } from "../src/adapters/deno/file_source.ts";

const arg = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1]! : fallback;
};
const model = arg("model", "models/fortune");
const tokens = Number(arg("tokens", "128"));
const streams = Number(arg("streams", "8"));
const out = arg("out", "");

const engine = new WebGpuEngine({
  files: dirFiles(model),
  name: model,
  kvBlocks: 256,
  maxNumSeqs: Math.max(streams, 1),
});
const config = await engine.start(0n);

async function run(
  n: number,
): Promise<{ streams: number; tokens: number; seconds: number; tokens_per_s: number }> {
  const request = (i: number): PreprocessedRequest => ({
    model: config.model,
    token_ids: [256, 65 + (i % 26), 32],
    stop_conditions: { max_tokens: tokens, ignore_eos: true },
    sampling_options: { temperature: 0 },
    output_options: {},
    eos_token_ids: [],
    annotations: [],
  });
  let first = Infinity, last = 0, count = 0;
  await Promise.all(Array.from({ length: n }, async (_, i) => {
    for await (const c of engine.generate(request(i), new RequestContext())) {
      const now = performance.now();
      if (c.token_ids.length > 0) first = Math.min(first, now);
      last = Math.max(last, now);
      count += c.token_ids.length;
    }
  }));
  const seconds = (last - first) / 1000;
  return { streams: n, tokens: count, seconds, tokens_per_s: count / seconds };
}

await run(1); // warm up pipelines
const results = [await run(1), await run(streams)];
await engine.cleanup();
for (const r of results) {
  console.error(
    `${r.streams} stream(s): ${r.tokens} tokens in ${r.seconds.toFixed(2)} s = ${
      r.tokens_per_s.toFixed(1)
    } tokens/s`,
  );
}
const report = {
  bench: "engine-decode",
  model,
  adapter: String(config.runtime_data?.adapter),
  date: new Date().toISOString(),
  results,
};
console.log(JSON.stringify(report, null, 2));
if (out) await Deno.writeTextFile(out, JSON.stringify(report, null, 2) + "\n");
