/**
 * `deno task bench:schemas [--completions 3] [--every 1] [--max-tokens 192] [--concurrency 16]
 * [--out FILE]`: issue 37's corpus run. Every schema of `test/fixtures/schemas/corpus.json`, as
 * `sampling_options.guided_decoding.json` through a live `serve` (fortune, its engine in a
 * worker, XGrammar in the grammar worker), `--completions` seeded draws each at temperature 1.
 * Counted: refusals (each must be a typed 400 whose message names a keyword of
 * docs/json_schema.md's table, or a schema that cannot be read at all), 5xx answers, requests
 * that hang past a minute, worker restarts (serve's log), finish reasons, and every completion
 * that ends `stop`, parsed and validated by ajv (2020-12, formats by ajv-formats): an invalid one
 * is "accepted then invalid", the count that must be 0. Writes a JSON report (default
 * `bench/results/schema-corpus-lavapipe.json`).
 */
import { runCorpus } from "./schema_corpus_run.ts";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    completions: { type: "string", default: "3" },
    every: { type: "string", default: "1" },
    "max-tokens": { type: "string", default: "192" },
    concurrency: { type: "string", default: "16" },
    out: { type: "string", default: "bench/results/schema-corpus-lavapipe.json" },
  },
  strict: true,
});
const int = (name: keyof typeof values) => {
  const v = Number(values[name]);
  if (!Number.isInteger(v) || v < 1) {
    console.error(`--${name}: expected a positive integer, got ${values[name]}`);
    Deno.exit(2);
  }
  return v;
};
const report = await runCorpus({
  completions: int("completions"),
  every: int("every"),
  maxTokens: int("max-tokens"),
  concurrency: int("concurrency"),
  log: (line) => console.error(line),
});
await Deno.writeTextFile(values.out!, JSON.stringify(report, null, 1) + "\n");
console.log(JSON.stringify(report.totals));
