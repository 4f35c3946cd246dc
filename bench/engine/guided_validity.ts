/**
 * How often guided JSON is valid: `--n` seeded completions at temperature 1 under each JSON
 * Schema of `bench/engine/guided_schemas.json` (nested objects, array bounds, enums, number ranges,
 * closed objects), sent as `sampling_options.guided_decoding: {json: schema}` to a
 * `WebGpuEngine`, each detokenized with the model's tokenizer, `JSON.parse`d and validated by
 * ajv. Free (unconstrained) requests run beside them all along (`--free` streams, restarted as
 * they end), so the engine's steps mix both; the engine's own count of steps that sampled a
 * guided sequence and of those that also sampled a free one is reported. Completions with raw
 * control characters (which XGrammar alone lets into length-bounded strings, and Kiln's JSON mask
 * keeps out) are counted too.
 *
 *   deno run -A bench/engine/guided_validity.ts [--model models/fortune] [--n 1000] [--guided 6]
 *     [--free 2] [--max-tokens 256] [--schemas bench/engine/guided_schemas.json] [--out FILE]
 */
import { RequestContext } from "../../src/contract/engine.ts";
import type { FinishReason, PreprocessedRequest } from "../../src/contract/types.ts";
import { WebGpuEngine } from "../../src/engines/webgpu/mod.ts";
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";
import { loadText } from "../../src/text/load.ts";
import {
  checkCompletion,
  type GuidedSchemas,
  type Verdict,
} from "../../test/support/json_schema.ts";

const { flags } = runCli({
  name: "guided_validity",
  command: "deno run -A bench/engine/guided_validity.ts",
  about: "Seeded temperature-1 completions under each JSON Schema of a schema file, beside " +
    "free requests: how many parse and validate (ajv); writes JSON.",
  flags: {
    model: { type: "string", arg: "DIR", default: "models/fortune", help: "a checkpoint folder" },
    n: { type: "integer", min: 1, default: 1000, help: "completions per schema" },
    guided: { type: "integer", min: 1, default: 6, help: "guided requests in flight" },
    free: { type: "integer", min: 1, default: 2, help: "free requests in flight beside them" },
    "max-tokens": { type: "integer", min: 1, default: 256, help: "max_tokens of each request" },
    schemas: {
      type: "string",
      arg: "FILE",
      default: "bench/engine/guided_schemas.json",
      help: "the schemas (name: {about, prompt, schema})",
    },
    out: {
      type: "string",
      arg: "FILE",
      default: "bench/results/guided-validity-lavapipe.json",
      help: "the JSON report",
    },
  },
});

const files = dirFiles(flags.model);
const { tokenizer } = await loadText(files);
const eos = tokenizer.eosTokenIds;
const schemas = JSON.parse(await Deno.readTextFile(flags.schemas)) as GuidedSchemas;
const engine = new WebGpuEngine({
  files,
  name: "guided-validity",
  maxNumSeqs: flags.guided + flags.free,
});
const config = await engine.start(0n);
const maxTokens = flags["max-tokens"];

const req = (prompt: string, seed: number, guided?: object): PreprocessedRequest => ({
  model: config.model,
  token_ids: tokenizer.encode(prompt),
  stop_conditions: { max_tokens: maxTokens },
  sampling_options: {
    temperature: 1,
    seed,
    ...(guided ? { guided_decoding: { json: guided } } : {}),
  },
  output_options: {},
  eos_token_ids: [...eos],
  annotations: [],
});

async function run(r: PreprocessedRequest): Promise<{ ids: number[]; finish: FinishReason }> {
  const ids: number[] = [];
  let finish: FinishReason = { error: "stream ended without a finish reason" };
  try {
    for await (const c of engine.generate(r, new RequestContext())) {
      ids.push(...c.token_ids);
      if (c.finish_reason !== undefined) finish = c.finish_reason;
    }
  } catch (e) {
    finish = { error: (e as Error).message };
  }
  return { ids, finish };
}

interface Tally {
  about: string;
  completions: number;
  parsed: number;
  valid: number;
  /** Completions with raw control characters (XGrammar alone lets them into bounded strings). */
  raw_controls: number;
  finish: { stop: number; length: number; error: number };
  /** Invalid completions per ajv error (`path keyword`, or `parse`). */
  errors: Record<string, number>;
  tokens: number;
  examples_invalid: { text: string; why: string }[];
}
const tallies: Record<string, Tally> = {};
const jobs: { name: string; seed: number }[] = [];
for (const [s, name] of Object.keys(schemas).entries()) {
  tallies[name] = {
    about: schemas[name]!.about,
    completions: 0,
    parsed: 0,
    valid: 0,
    raw_controls: 0,
    finish: { stop: 0, length: 0, error: 0 },
    errors: {},
    tokens: 0,
    examples_invalid: [],
  };
  for (let i = 0; i < flags.n; i++) jobs.push({ name, seed: 1_000_000 * (s + 1) + i });
}
// Schemas interleaved, so every batch holds several of them.
jobs.sort((a, b) => (a.seed % 1_000_000) - (b.seed % 1_000_000));

const free = { requests: 0, tokens: 0, errors: 0 };
let done = false;
const t0 = performance.now();
const guidedLane = async () => {
  for (let job = jobs.shift(); job !== undefined; job = jobs.shift()) {
    const { schema, prompt } = schemas[job.name]!;
    const r = await run(req(prompt, job.seed, schema));
    const t = tallies[job.name]!;
    const text = tokenizer.decode(r.ids, { skipSpecial: true });
    const v: Verdict = checkCompletion(schema, text);
    // deno-lint-ignore no-control-regex
    if (/[\u0000-\u001f]/.test(text)) t.raw_controls++;
    t.completions++;
    for (const e of new Set(v.errors)) t.errors[e] = (t.errors[e] ?? 0) + 1;
    t.tokens += r.ids.length;
    if (v.parsed) t.parsed++;
    if (v.valid) t.valid++;
    const f = r.finish;
    if (typeof f === "object") t.finish.error++;
    else if (f === "length") t.finish.length++;
    else t.finish.stop++;
    if (!v.valid && t.examples_invalid.length < 5) {
      t.examples_invalid.push({ text: v.text, why: `${v.why}; finish ${JSON.stringify(f)}` });
    }
    const total = Object.values(tallies).reduce((n, x) => n + x.completions, 0);
    if (total % 100 === 0) {
      const s = (performance.now() - t0) / 1000;
      console.error(`${total} guided completions in ${s.toFixed(0)} s`);
    }
  }
};
const freePrompts = ["You will ", "A friend ", "Tomorrow ", "Beware "];
const freeLane = async (lane: number) => {
  while (!done) {
    const r = await run(req(freePrompts[free.requests % 4]!, 7_000_000 + free.requests++));
    free.tokens += r.ids.length;
    if (typeof r.finish === "object") free.errors++;
    void lane;
  }
};
const frees = Array.from({ length: flags.free }, (_, i) => freeLane(i));
await Promise.all(Array.from({ length: flags.guided }, guidedLane));
done = true;
await Promise.all(frees);
const seconds = (performance.now() - t0) / 1000;

const report = {
  bench: "guided-validity",
  date: new Date().toISOString(),
  deno: Deno.version.deno,
  model: flags.model,
  options: {
    n: flags.n,
    temperature: 1,
    max_tokens: maxTokens,
    guided_in_flight: flags.guided,
    free_in_flight: flags.free,
    schemas: flags.schemas,
    seeds: "1e6 * (schema index + 1) + i, distinct per completion",
  },
  machine: { cores: navigator.hardwareConcurrency, loadavg: Deno.loadavg() },
  seconds,
  steps: {
    submitted: engine.steps.submitted,
    sampling_guided: engine.steps.guided,
    sampling_guided_and_free: engine.steps.mixed,
  },
  free,
  schemas: Object.fromEntries(
    Object.entries(tallies).map(([k, t]) => [k, { ...t, mean_tokens: t.tokens / t.completions }]),
  ),
};
await engine.cleanup();
await Deno.writeTextFile(flags.out, JSON.stringify(report, null, 2) + "\n");
for (const [k, t] of Object.entries(report.schemas)) {
  console.error(
    `${k}: ${t.valid}/${t.completions} valid, ${t.raw_controls} with raw control characters, ` +
      `${t.parsed} parsed, finish ${JSON.stringify(t.finish)}, ${t.mean_tokens.toFixed(1)} tokens`,
  );
}
console.error(
  `free: ${free.requests} requests; steps ${engine.steps.mixed}/${engine.steps.guided} ` +
    `guided steps also sampled a free sequence; ${seconds.toFixed(0)} s; wrote ${flags.out}`,
);
