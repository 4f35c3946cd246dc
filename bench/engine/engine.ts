/**
 * Decode throughput of `WebGpuEngine` on a checkpoint: tokens/s for 1 stream and for N
 * concurrent streams (greedy, `ignore_eos`), prefill excluded by timing from the first token.
 * Two engines run side by side in one process: the peer waits for every step's tokens
 * (`pipelineDepth: 1`), the default keeps several steps in flight; the report gives the ratio.
 *
 *   deno run -A bench/engine/engine.ts [--model models/fortune] [--tokens 128] [--streams 8] [--out FILE]
 */
import { RequestContext } from "../../src/contract/engine.ts";
import type { PreprocessedRequest } from "../../src/contract/types.ts";
import { WebGpuEngine } from "../../src/engines/webgpu/engine.ts";
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";

const { flags } = runCli({
  name: "engine",
  command: "deno run -A bench/engine/engine.ts",
  about: "WebGpuEngine's decode tokens/s at 1 and N streams, pipelined against one step at a " +
    "time; prints JSON.",
  flags: {
    model: { type: "string", arg: "DIR", default: "models/fortune", help: "a checkpoint folder" },
    tokens: { type: "integer", min: 1, default: 128, help: "tokens per stream" },
    streams: { type: "integer", min: 1, default: 8, help: "concurrent streams" },
    out: { type: "string", arg: "FILE", help: "also write the JSON report here" },
  },
});
const { model, tokens, streams } = flags;
const out = flags.out;

interface Result {
  mode: string;
  streams: number;
  tokens: number;
  seconds: number;
  tokens_per_s: number;
  max_in_flight: number;
}

async function measure(mode: string, pipelineDepth?: number): Promise<Result[]> {
  const engine = new WebGpuEngine({
    files: dirFiles(model),
    name: model,
    kvBlocks: 256,
    maxNumSeqs: Math.max(streams, 1),
    ...(pipelineDepth === undefined ? {} : { pipelineDepth }),
  });
  const config = await engine.start(0n);
  adapter = String(config.runtime_data?.adapter);
  async function run(n: number): Promise<Result> {
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
    return {
      mode,
      streams: n,
      tokens: count,
      seconds,
      tokens_per_s: count / seconds,
      max_in_flight: engine.steps.maxInFlight,
    };
  }
  await run(1); // warm up pipelines (and the adaptive depth's step-time estimate)
  const results = [await run(1), await run(streams)];
  await engine.cleanup();
  for (const r of results) {
    console.error(
      `${mode}: ${r.streams} stream(s): ${r.tokens} tokens in ${r.seconds.toFixed(2)} s = ${
        r.tokens_per_s.toFixed(1)
      } tokens/s (up to ${r.max_in_flight} steps in flight)`,
    );
  }
  return results;
}

let adapter = "";
const sync = await measure("one step at a time", 1);
const piped = await measure("pipelined");
const results = [...sync, ...piped];
const ratios = piped.map((r, i) => ({
  streams: r.streams,
  pipelined_over_sync: r.tokens_per_s / sync[i]!.tokens_per_s,
}));
for (const r of ratios) {
  console.error(`${r.streams} stream(s): pipelined / sync = ${r.pipelined_over_sync.toFixed(2)}x`);
}
const report = {
  bench: "engine-decode",
  model,
  adapter,
  date: new Date().toISOString(),
  results,
  ratios,
};
console.log(JSON.stringify(report, null, 2));
if (out) await Deno.writeTextFile(out, JSON.stringify(report, null, 2) + "\n");
