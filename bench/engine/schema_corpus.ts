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
import { runCli } from "../../src/adapters/deno/flags.ts";

const { flags } = runCli({
  name: "schema_corpus",
  command: "deno task bench:schemas",
  about: "Issue 37's corpus through a live serve: every schema as guided_decoding.json, " +
    "seeded completions at temperature 1, each answer validated by ajv; writes a JSON report.",
  flags: {
    completions: { type: "integer", min: 1, default: 3, help: "completions per schema" },
    every: { type: "integer", min: 1, default: 1, help: "every n-th schema of the corpus" },
    "max-tokens": { type: "integer", min: 1, default: 192, help: "max_tokens of each" },
    concurrency: { type: "integer", min: 1, default: 16, help: "requests in flight at once" },
    out: {
      type: "string",
      arg: "FILE",
      default: "bench/results/schema-corpus-lavapipe.json",
      help: "the JSON report",
    },
  },
});
const report = await runCorpus({
  completions: flags.completions,
  every: flags.every,
  maxTokens: flags["max-tokens"],
  concurrency: flags.concurrency,
  log: (line) => console.error(line),
});
await Deno.writeTextFile(flags.out, JSON.stringify(report, null, 1) + "\n");
console.log(JSON.stringify(report.totals));
