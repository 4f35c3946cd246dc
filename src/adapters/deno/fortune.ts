/**
 * `npm run fortune [-- PROMPT] [--model DIR|FILE.gguf] [--metrics]` (headless; `npm start` is the
 * web demo): start a `WebGpuEngine` on the embedded fortune model (or the checkpoint folder or
 * GGUF file given, with its own tokenizer) and the WebGPU adapter Deno finds, stream a sampled
 * completion to the terminal, then drain and clean up. With `--metrics` it then prints the metrics
 * a scraper would read (model load, drain and cleanup times, KV cache gauges, request counters).
 * No prompt: the model's BOS token starts the text (a model without one needs a prompt: exit 2).
 * A `--model` path that does not exist, or a model that cannot be loaded, ends the run with one
 * line naming it (exit 2); a request the engine fails (a prompt longer than the context) with that
 * line after the text so far (exit 1).
 */
import { RequestContext } from "../../contract/engine.ts";
import { EngineError } from "../../contract/errors.ts";
import { WebGpuEngine } from "../../engines/webgpu/engine.ts";
import { shutDown } from "../../metrics/engine_lifecycle.ts";
import { RequestMetrics } from "../../metrics/request_metrics.ts";
import { modelName } from "../../formats/source.ts";
import { startModel } from "../../runtime/start.ts";
import { IncrementalDetokenizer } from "../../text/detokenizer.ts";
import { dirFiles } from "./file_source.ts";
import { runCli } from "./flags.ts";
import { KERNEL_PATHS_ENV, kernelPathsOption } from "./kernel_paths.ts";
import { requireModelPath } from "./model_path.ts";

const { flags, args, env, fail } = runCli({
  name: "fortune",
  command: "npm run fortune --",
  about: "A sampled completion of PROMPT streamed to the terminal by the WebGPU engine " +
    "(with --metrics, then the metrics a Prometheus scraper would read).",
  flags: {
    model: {
      type: "string",
      arg: "DIR|FILE.gguf",
      help: "a checkpoint folder or GGUF file (default: the embedded fortune model)",
    },
    metrics: {
      type: "boolean",
      help: "after the text, print the metrics in Prometheus text (load, drain and cleanup " +
        "times, KV cache gauges, request counters)",
    },
  },
  args: {
    usage: "[PROMPT]",
    min: 0,
    max: 1,
    help: "the text to continue, one argument (quote it); none: start from the model's BOS",
  },
  env: {
    KILN_SEED: { type: "integer", min: 0, help: "the sampling seed (default: from the clock)" },
    KILN_MAX_TOKENS: { type: "integer", min: 1, default: 400, help: "tokens to generate" },
    ...KERNEL_PATHS_ENV,
  },
});
const modelPath = flags.model ?? new URL("../../../models/fortune/", import.meta.url).pathname;
requireModelPath("fortune", modelPath);
const promptText = args[0] ?? "";
const seed = env.KILN_SEED ?? Date.now() % 1_000_000;

/** The line an error ends the run with: its type and message, no stack. */
const errorLine = (e: EngineError) => `fortune: ${e.type}: ${e.message}`;
const exitWith = (e: unknown): never => {
  console.error(errorLine(EngineError.from(e)));
  Deno.exit(2);
};

const files = dirFiles(modelPath);
const name = modelName(modelPath);
const engine = new WebGpuEngine({ files, name, kvBlocks: 64, ...kernelPathsOption(env) });
const { config, text, metrics } = await startModel(
  engine,
  files,
  { namespace: "kiln", component: "start", endpoint: "generate", workerId: 1n },
).catch(exitWith);
let prompt = text.tokenizer.encode(promptText);
if (prompt.length === 0) {
  // An empty text encodes to nothing when the tokenizer adds no BOS (a GGUF whose metadata says
  // add_bos_token: false): start from the model's BOS token, if it has one.
  const bos = text.tokenizer.bosTokenId;
  if (bos === undefined) await engine.cleanup();
  prompt = [bos ?? fail(`${name} has no BOS token to start from: a PROMPT is needed`)];
}
const requests = new RequestMetrics(metrics.registry);
console.error(
  `${name} (${config.runtime_data?.weights_dtype}) on ${config.runtime_data?.adapter}: loaded in ${
    engine.modelLoadTime.toFixed(2)
  } s (seed ${seed})`,
);

const tracker = requests.startRequest(name, prompt.length);
const detok = new IncrementalDetokenizer(text.tokenizer, prompt, { skipSpecial: true });
const write = (s: string) => Deno.stdout.write(new TextEncoder().encode(s));
await write(promptText);
let n = 0;
const tGen = performance.now();
const ctx = new RequestContext();
let failure: EngineError | undefined;
try {
  for await (
    const chunk of engine.generate({
      model: config.model,
      token_ids: prompt,
      stop_conditions: { max_tokens: env.KILN_MAX_TOKENS },
      sampling_options: { temperature: 0.8, top_p: 0.95, seed },
      output_options: {},
      eos_token_ids: [...text.tokenizer.eosTokenIds],
      annotations: [],
    }, ctx)
  ) {
    n += chunk.token_ids.length;
    if (chunk.token_ids.length > 0) tracker.tokens(chunk.token_ids.length);
    await write(detok.push(chunk.token_ids));
    if (chunk.finish_reason) tracker.finish("success");
  }
} catch (e) {
  failure = EngineError.from(e);
  tracker.finish("error", failure.type);
}
const seconds = (performance.now() - tGen) / 1000;
if (failure) console.error(`\n\n${errorLine(failure)}`);
else {
  console.log(`\n\n(${n} tokens in ${seconds.toFixed(2)} s, ${(n / seconds).toFixed(1)} tokens/s)`);
}
await shutDown(engine, metrics);
if (flags.metrics) {
  console.log("\n--- metrics (Prometheus text) ---");
  console.log(metrics.render().body);
}
if (failure) Deno.exit(1);
