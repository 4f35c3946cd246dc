/**
 * The command line of `deno task bench` (`bench.ts`): every flag, its type, bounds and help.
 *
 * @module
 */
import type { FlagTable } from "../../src/adapters/deno/flags.ts";
import { ALL_MIXES, LLAMA_ONLY_MIXES } from "./shape_model.ts";

/** The flags `bench.ts` reads. */
export const BENCH_FLAGS = {
  shapes: { type: "list", arg: "NAME,...", help: "shapes of bench/engine/shapes/ (default: all)" },
  model: { type: "string", arg: "DIR", help: "an HF checkpoint folder instead of the shapes" },
  batches: { type: "integers", min: 1, help: "decode batch sizes (default 1,8,32; --quick 1)" },
  tokens: { type: "integer", min: 1, help: "decode tokens per stream (default 128; --quick 4)" },
  prefill: {
    type: "integers",
    min: 1,
    help: "prefill prompt lengths (default 512,2048; --quick 16)",
  },
  rounds: { type: "integer", min: 1, help: "timed rounds (default 3; --quick 1)" },
  "max-batched-tokens": { type: "integer", min: 1, help: "the engine's max_num_batched_tokens" },
  "encode-iters": {
    type: "integer",
    min: 1,
    help: "steps timed for CPU encode time (default 200; --quick 30)",
  },
  "probe-mib": {
    type: "integer",
    min: 1,
    help: "MiB the read probe reads (default 1024; --quick 256)",
  },
  peers: {
    type: "boolean",
    help: "also time the peers of bench/peers/ (installs their packages)",
  },
  "peer-threads": {
    type: "integers",
    min: 1,
    help: "--peers: thread counts a CPU peer tries (default 1 to the core count)",
  },
  only: { type: "list", arg: "PEER,...", help: "--peers: only these peers (by name)" },
  "pipeline-depth": {
    type: "integer",
    min: 1,
    help: "Kiln's decode steps in flight, fixed (default: adaptive); 1 reads every token back " +
      "before the next step, so no two arrive together",
  },
  "sweep-rounds": {
    type: "integer",
    min: 1,
    help: "--peers: rounds per thread count of the sweep (default 2; --quick 1)",
  },
  quick: { type: "boolean", help: "tiny counts, for CPU adapters such as lavapipe" },
  quant: {
    type: "list",
    choices: ALL_MIXES,
    help: `also run each shape as these GGUF mixes (${
      LLAMA_ONLY_MIXES.join(", ")
    }: --quantizer llama.cpp only)`,
  },
  quantizer: {
    type: "enum",
    choices: ["kiln", "llama.cpp"],
    help: "--quant: whose quantizer makes the files (default kiln)",
  },
  "quant-only": { type: "boolean", help: "--quant: leave out the F16 checkpoints" },
  layers: {
    type: "integers",
    min: 1,
    help: "bench each shape's first N decoder layers (every width kept), per N",
  },
  "decode-only": { type: "boolean", help: "no prefill runs (decode tokens/s only)" },
  contexts: {
    type: "integers",
    min: 1,
    help: "decode tokens/s of one stream after a prompt of each length (capped at the model's " +
      "context; bench/engine/contexts.ts)",
  },
  gguf: {
    type: "list",
    arg: "FILE,...",
    help:
      "GGUF files (llama.cpp's own, say) run as they are, after the shapes; peers get the same files",
  },
  out: { type: "string", arg: "FILE", help: "the JSON report (default bench/results/...)" },
  caption: { type: "string", arg: "TEXT", help: "a caption for the report and chart" },
  engine: { type: "enum", choices: ["ort"], help: "also time onnxruntime-web's OrtEngine" },
  onnx: { type: "string", arg: "DIR", help: "--engine ort: an ONNX export of --model" },
  variant: { type: "string", help: "--engine ort: the graph in onnx/" },
  ep: { type: "enum", choices: ["webgpu", "wasm"], help: "--engine ort: execution provider" },
} as const satisfies FlagTable;
