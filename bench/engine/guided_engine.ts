/**
 * What a token mask provider costs a WebGpuEngine request: decode tokens/s of free streams and
 * of guided ones whose provider allows every token (so both generate the same text and only the
 * mechanism differs: a mask upload and pass each step, and no pipelining for the guided one),
 * alone and in a batch where half the streams are guided. Greedy, `ignore_eos`, prefill
 * excluded (timed from each stream's first token). A free stream alone on an engine that waits
 * for every step's tokens (`pipelineDepth: 1`) separates the cost of waiting from the mask's.
 *
 *   deno run -A bench/engine/guided_engine.ts [--model models/fortune] [--tokens 96] [--streams 8]
 */
import { RequestContext } from "../../src/contract/engine.ts";
import type { PreprocessedRequest } from "../../src/contract/types.ts";
import { freeMask, type TokenMaskProvider, WebGpuEngine } from "../../src/engines/webgpu/mod.ts";
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";
import { openCheckpoint } from "../../src/model/checkpoint.ts";

const { flags } = runCli({
  name: "guided_engine",
  command: "deno run -A bench/engine/guided_engine.ts",
  about: "Decode tokens/s of free and guided (all-allowing mask) streams, alone and mixed; " +
    "prints JSON.",
  flags: {
    model: { type: "string", arg: "DIR", default: "models/fortune", help: "a checkpoint folder" },
    tokens: { type: "integer", min: 1, default: 96, help: "tokens per stream" },
    streams: { type: "integer", min: 2, default: 8, help: "streams in the mixed batch" },
    "mask-path": {
      type: "enum",
      choices: ["pass", "fused"],
      default: "pass",
      help: "where the mask is applied",
    },
  },
});
const files = dirFiles(flags.model);
const tokenMaskPath = flags["mask-path"] === "fused" ? "fused" : "pass";
const vocab = (await openCheckpoint(files)).config.vocabSize;
const everything: TokenMaskProvider = { nextMask: () => freeMask(vocab) };
let engine = new WebGpuEngine({ files, name: "bench", pipelineDepth: 1, tokenMaskPath });
await engine.start(0n);
await streamRate(0, false); // warm
const freeUnpipelined = await streamRate(0, false);
const guidedUnpipelined = await streamRate(0, true);
const inFlight = engine.steps.maxInFlight;
await engine.cleanup();
engine = new WebGpuEngine({ files, name: "bench", tokenMaskPath });
await engine.start(0n);

function req(i: number): PreprocessedRequest {
  return {
    model: "bench",
    token_ids: [1, 10 + i, 20 + i, 30 + i],
    stop_conditions: { max_tokens: flags.tokens, ignore_eos: true },
    sampling_options: { temperature: 0 },
    output_options: {},
    eos_token_ids: [],
    annotations: [],
  };
}

/** Tokens/s of each stream, from its first token to its last. */
async function streamRate(i: number, guided: boolean): Promise<{ tps: number; ids: number[] }> {
  let first = 0, n = 0;
  const ids: number[] = [];
  for await (
    const c of engine.generate(req(i), new RequestContext(), guided ? everything : undefined)
  ) {
    if (n === 0) first = performance.now();
    n += c.token_ids.length;
    ids.push(...c.token_ids);
  }
  return { tps: (n - 1) / ((performance.now() - first) / 1000), ids };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
await streamRate(0, false); // warm
const freeAlone = await streamRate(0, false);
const guidedAlone = await streamRate(0, true);
const mixed = await Promise.all(
  Array.from({ length: flags.streams }, (_, i) => streamRate(i, i % 2 === 1)),
);
const allFree = await Promise.all(
  Array.from({ length: flags.streams }, (_, i) => streamRate(i, false)),
);
const same = mixed.every((r, i) => r.ids.join() === allFree[i]!.ids.join()) &&
  freeAlone.ids.join() === guidedAlone.ids.join();
const report = {
  model: flags.model,
  mask_path: tokenMaskPath,
  tokens: flags.tokens,
  same_tokens: same,
  alone: { free_tps: freeAlone.tps, guided_tps: guidedAlone.tps },
  depth_1: {
    free_tps: freeUnpipelined.tps,
    guided_tps: guidedUnpipelined.tps,
    max_in_flight: inFlight,
  },
  mixed: {
    streams: flags.streams,
    free_tps: mean(mixed.filter((_, i) => i % 2 === 0).map((r) => r.tps)),
    guided_tps: mean(mixed.filter((_, i) => i % 2 === 1).map((r) => r.tps)),
    all_free_tps: mean(allFree.map((r) => r.tps)),
  },
  max_in_flight: engine.steps.maxInFlight,
};
console.log(JSON.stringify(report, null, 2));
await engine.cleanup();
