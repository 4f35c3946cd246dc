/**
 * What forced stretches save a guided request (`guidedForcing: "chunk"` against `"off"`): decode
 * tokens/s and engine steps per output token of greedy requests constrained by a JSON Schema
 * with fixed keys (XGrammar), alone and in a batch where half the streams are guided and half
 * free. Tokens/s is timed from each stream's first token to its last; steps per token counts
 * every step the engine submitted while the batch ran, over the guided streams' tokens (alone)
 * or all streams' tokens (mixed); `batch_tps` is the mixed batch's tokens over its wall time.
 * Both modes must give the same tokens (`same_tokens`).
 *
 *   deno run -A bench/engine/guided_forcing.ts [--model models/fortune] [--streams 8] [--rounds 3]
 */
import { RequestContext } from "../../src/contract/engine.ts";
import type { PreprocessedRequest } from "../../src/contract/types.ts";
import { type GuidedForcing, WebGpuEngine } from "../../src/engines/webgpu/mod.ts";
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";
import { openCheckpoint } from "../../src/model/checkpoint.ts";

const { flags } = runCli({
  name: "guided_forcing",
  command: "deno run -A bench/engine/guided_forcing.ts",
  about: "Decode tokens/s and steps per token of JSON-Schema-guided streams with forced " +
    "stretches chunked and off, alone and mixed with free streams; prints JSON.",
  flags: {
    model: { type: "string", arg: "DIR", default: "models/fortune", help: "a checkpoint folder" },
    streams: { type: "integer", min: 2, default: 8, help: "streams in the mixed batch" },
    rounds: { type: "integer", min: 1, default: 3, help: "rounds per mode (best kept)" },
  },
});
const files = dirFiles(flags.model);
const config = (await openCheckpoint(files)).config;

/** A fortune record: fixed keys (forced), a few free values. */
const SCHEMA = {
  type: "object",
  properties: {
    fortune_teller_name: { type: "string", maxLength: 10 },
    lucky_number_of_the_day: { type: "integer", minimum: 0, maximum: 99 },
    general_mood_of_the_stars: { type: "string", enum: ["favourable", "uncertain", "grim"] },
    short_message_for_you: { type: "string", maxLength: 24 },
    should_you_travel_today: { type: "boolean" },
  },
  required: [
    "fortune_teller_name",
    "lucky_number_of_the_day",
    "general_mood_of_the_stars",
    "short_message_for_you",
    "should_you_travel_today",
  ],
  additionalProperties: false,
};

const bytes = (s: string) => [...new TextEncoder().encode(s)];
function req(i: number, guided: boolean): PreprocessedRequest {
  return {
    model: "bench",
    token_ids: bytes(["Your fortune: ", "Tell me: ", "Today: ", "Stars say: "][i % 4]!),
    stop_conditions: { max_tokens: guided ? 300 : 96, ...(guided ? {} : { ignore_eos: true }) },
    sampling_options: { temperature: 0, ...(guided ? { guided_decoding: { json: SCHEMA } } : {}) },
    output_options: {},
    eos_token_ids: config.eosTokenIds,
    annotations: [],
  };
}

interface Stream {
  tps: number;
  ids: number[];
}

async function stream(e: WebGpuEngine, r: PreprocessedRequest): Promise<Stream> {
  let first = 0, n = 0;
  const ids: number[] = [];
  for await (const c of e.generate(r, new RequestContext())) {
    if (n === 0 && c.token_ids.length > 0) first = performance.now();
    n += c.token_ids.length;
    ids.push(...c.token_ids);
  }
  return { tps: (n - 1) / ((performance.now() - first) / 1000), ids };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

async function measure(forcing: GuidedForcing) {
  const e = new WebGpuEngine({ files, name: "bench", guidedForcing: forcing });
  await e.start(0n);
  try {
    await stream(e, req(0, true)); // warm (compiles the schema)
    let alone: { tps: number; steps_per_token: number; ids: number[] } | undefined;
    let mixed:
      | { guided_tps: number; free_tps: number; steps_per_token: number; ids: number[][] }
      | undefined;
    for (let round = 0; round < flags.rounds; round++) {
      let s0 = e.steps.submitted;
      const one = await stream(e, req(0, true));
      const a = {
        tps: one.tps,
        steps_per_token: (e.steps.submitted - s0) / one.ids.length,
        ids: one.ids,
      };
      if (alone === undefined || a.tps > alone.tps) alone = a;
      s0 = e.steps.submitted;
      const t0 = performance.now();
      const runs = await Promise.all(
        Array.from({ length: flags.streams }, (_, i) => stream(e, req(i, i % 2 === 1))),
      );
      const total = runs.reduce((t, r) => t + r.ids.length, 0);
      const m = {
        batch_tps: total / ((performance.now() - t0) / 1000),
        guided_tps: mean(runs.filter((_, i) => i % 2 === 1).map((r) => r.tps)),
        free_tps: mean(runs.filter((_, i) => i % 2 === 0).map((r) => r.tps)),
        steps_per_token: (e.steps.submitted - s0) / total,
        ids: runs.map((r) => r.ids),
      };
      if (mixed === undefined || m.guided_tps > mixed.guided_tps) mixed = m;
    }
    return { alone: alone!, mixed: mixed!, forced_tokens: e.steps.forcedTokens };
  } finally {
    await e.cleanup();
  }
}

const off = await measure("off");
const chunk = await measure("chunk");
const strip = <T extends { ids: unknown }>({ ids: _, ...rest }: T) => rest;
const report = {
  model: flags.model,
  streams: flags.streams,
  guided_tokens: chunk.alone.ids.length,
  same_tokens: off.alone.ids.join() === chunk.alone.ids.join() &&
    off.mixed.ids.every((ids, i) => ids.join() === chunk.mixed.ids[i]!.join()),
  off: { alone: strip(off.alone), mixed: strip(off.mixed) },
  chunk: {
    alone: strip(chunk.alone),
    mixed: strip(chunk.mixed),
    forced_tokens: chunk.forced_tokens,
  },
};
console.log(JSON.stringify(report, null, 2));
