/**
 * `deno task bench`: Kiln on real model shapes with random F16 weights (`bench/engine/shapes/*.json`,
 * generated once into `.cache/kiln-bench/`, see `checkpoint.ts`) or on any HF folder.
 * Per shape: decode tokens/s at several batch sizes, prefill tokens/s and time to first token,
 * dispatches and CPU encode time per decode step, and batch-1 weight reads in GB/s beside a
 * read-bandwidth probe run in the same process (prefill FLOP/s beside an FMA probe's); for a model with a tokenizer, JSON Schema
 * compile times and guided against free decode tokens/s at batch 1 and 8 (`guided_cost.ts`). With `--peers`, other engines
 * (`bench/peers/mod.ts`) are checked for Kiln's greedy tokens and timed interleaved with it.
 *
 *   deno task bench [--shapes a,b | --model DIR] [--batches 1,8,32] [--tokens 128]
 *     [--prefill 512,2048] [--rounds 3] [--max-batched-tokens N] [--encode-iters 200]
 *     [--probe-mib 1024] [--peers [--peer-threads 1,2,4] [--sweep-rounds 2]] [--quick]
 *     [--quant q8_0,q4_k_m [--quantizer kiln|llama.cpp] [--quant-only]] [--gguf FILE,...]
 *     [--layers 1,4] [--decode-only] [--pipeline-depth N] [--only PEER,...] [--out FILE]
 *     [--contexts 128,2048,8192]
 *     [--engine ort [--onnx DIR] [--variant model] [--ep webgpu|wasm]] [--caption TEXT]
 *
 * A CPU peer (llama.cpp's CPU build) is run at each thread count of `--peer-threads` (default 1
 * to `navigator.hardwareConcurrency`) for every batch size and prefill length, `--sweep-rounds`
 * times (default 2, `--quick` 1), and timed against Kiln with the fastest (`threads.ts`). Other
 * processes' share of the CPU is read around every timed stretch; a starved peer or a disturbed
 * run is marked not publishable and its ratios are left out of the table and chart (`guard.ts`).
 *
 * `--engine ort`: also time onnxruntime-web's `OrtEngine` (`ort_runner.ts`) on an ONNX export of
 * the same weights (`--onnx DIR`; for `--model models/fortune` its export by the fixture
 * helper), same prompts, interleaved with Kiln like a peer, after its greedy tokens match.
 *
 * `--quant`: also run each shape as GGUF files quantized by Kiln's converter (cached beside the
 * checkpoint), and hand llama.cpp the very same file. `--gguf FILE,...`: run GGUF files as they
 * are (llama.cpp's own quantizations), after the shapes (alone: only them), peers given the same
 * files. `--quantizer llama.cpp`: the `--quant` files are made by llama.cpp's own quantizer
 * (`llama_model_quantize` on the checkpoint's F16 GGUF) instead; `--quant-only` leaves out the
 * F16 runs.
 *
 * `--layers 1,4`: each shape truncated to its first N decoder layers, every width and expert kept
 * (`checkpoint.ts`), one row per depth named `<shape>-first<N>` with `slice: { layers, of }`; two
 * or more depths give each engine's time per layer (`slices.ts`). For shapes too large for the
 * machine. `--decode-only`: no prefill runs (a `--quick` run on lavapipe spends most of its
 * peers' time there otherwise).
 *
 * `--contexts`: decode tokens/s of one stream after a prompt of each length (`contexts.ts`).
 *
 * Writes JSON (default `bench/results/bench-<adapter>.json`), an SVG beside it, a table to stderr.
 */
import { relative, resolve } from "node:path";
import { acquireGpu, runtimeData } from "../../src/gpu/device.ts";
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { openCheckpoint } from "../../src/model/checkpoint.ts";
import { modelName } from "../../src/formats/source.ts";
import { parseConfig } from "../../src/model/config.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";
import { BENCH_FLAGS } from "./bench_flags.ts";
import { listShapes, readManifest } from "./checkpoint.ts";
import { kilnWrites, type Mix, type Quantizer, shapeModel } from "./shape_model.ts";
import { elements, tensorSpecs } from "./random_weights.ts";
import { forwardStats, weightBytes } from "./forward_stats.ts";
import { KilnRunner, prompt } from "./kiln_runner.ts";
import { fmaProbe, readProbe } from "../probes/probe.ts";
import { prefillFlopsPerToken, withFlops } from "./flops.ts";
import { comparePeers, median } from "./compare.ts";
import { adapterSlug } from "../lib/adapter_slug.ts";
import { type BenchReport, formatTable, type ShapeResult } from "./report.ts";
import { renderBenchChart } from "./bench_chart.ts";
import { parseThreadList, threadCandidates } from "./threads.ts";
import { machineProbe } from "./machine_load.ts";
import { perLayer } from "./slices.ts";
import { contextBench, contextPositions } from "./contexts.ts";
import { guidedBench, hasTokenizer } from "./guided_cost.ts";
import { loadPeers } from "./load_peers.ts";

const { flags, fail } = runCli({
  name: "bench",
  command: "deno task bench",
  about: "Kiln on real model shapes (random F16 weights) or an HF folder: decode and prefill " +
    "tokens/s, dispatches and encode time per step, weight reads against a read probe; JSON and " +
    "an SVG in bench/results/.",
  flags: BENCH_FLAGS,
});
if (flags.model !== undefined && flags.shapes !== undefined) {
  fail("--model and --shapes: give one of them");
}
const known = await listShapes();
const unknown = flags.shapes?.find((s) => !known.includes(s));
if (unknown !== undefined) fail(`--shapes: no shape ${unknown} (${known.join(", ")})`);
if (flags.quant === undefined) {
  for (const k of ["quantizer", "quant-only"] as const) {
    if (flags[k] !== undefined && flags[k] !== false) fail(`--${k} needs --quant`);
  }
}
if (flags.layers !== undefined && flags.model !== undefined) {
  fail("--layers slices the bench shapes; not with --model");
}
if (flags.engine === undefined) {
  for (const k of ["onnx", "variant", "ep"] as const) {
    if (flags[k] !== undefined) fail(`--${k} needs --engine ort`);
  }
}

const quick = flags.quick;
// --quick is sized for lavapipe, where a SmolLM2 decode step takes seconds and a 512-token
// prefill tens of minutes: one stream, a few tokens, a prompt as long as the decode prompts.
const batches = flags.batches ?? (quick ? [1] : [1, 8, 32]);
const tokens = flags.tokens ?? (quick ? 4 : 128);
if (flags["decode-only"] && flags.prefill !== undefined) fail("--decode-only and --prefill");
const prefillLengths = flags["decode-only"] ? [] : flags.prefill ?? (quick ? [16] : [512, 2048]);
const rounds = flags.rounds ?? (quick ? 1 : 3);
const encodeIters = flags["encode-iters"] ?? (quick ? 30 : 200);
const probeMiB = flags["probe-mib"] ?? (quick ? 256 : 1024);
const maxBatched = flags["max-batched-tokens"];
const pipelineDepth = flags["pipeline-depth"];
const contexts = flags.contexts;
if (flags.only !== undefined && !flags.peers) fail("--only needs --peers");
const PROMPT = 16; // decode prompts: 16 tokens per stream
const modelDir = flags.model;
const mixes: Mix[] = (flags.quant ?? []) as Mix[];
const llamaOnly = mixes.find((m) => !kilnWrites(m));
if (llamaOnly !== undefined && flags.quantizer !== "llama.cpp") {
  fail(`--quant ${llamaOnly}: Kiln's converter does not write it; add --quantizer llama.cpp`);
}
// --gguf alone runs only those files.
const shapes = modelDir
  ? [modelName(modelDir)]
  : (flags.shapes ?? (flags.gguf !== undefined ? [] : known));
const log = (l: string) => console.error(l);
const peerThreads = {
  candidates: flags["peer-threads"] !== undefined
    ? parseThreadList(flags["peer-threads"].join(","))
    : threadCandidates(navigator.hardwareConcurrency),
  rounds: flags["sweep-rounds"] ?? (quick ? 1 : 2),
};

const loadStart = machineProbe.loadavg() ?? null;
const gpu = await acquireGpu({ label: "kiln-bench" });
const adapter = gpu.caps.adapter;
log(`adapter: ${adapter}`);
const probe = await readProbe(gpu, { bytes: probeMiB * 2 ** 20 });
log(`read probe: ${probe.gb_per_s.toFixed(2)} GB/s over ${probe.bytes / 2 ** 20} MiB`);
const fma = await fmaProbe(gpu);
log(`FMA probe: ${fma.gflop_per_s.toFixed(1)} GFLOP/s f32`);

const peers = await loadPeers(
  {
    peers: flags.peers,
    ...(flags.only ? { only: flags.only } : {}),
    ...(flags.engine === "ort"
      ? {
        ort: {
          maxNumSeqs: Math.max(...batches),
          ...(flags.onnx ? { onnx: flags.onnx } : {}),
          ...(modelDir ? { modelDir } : {}),
          ...(flags.variant ? { variant: flags.variant } : {}),
          ...(flags.ep ? { ep: flags.ep } : {}),
        },
      }
      : {}),
  },
  fail,
  log,
);

/**
 * Fill `result` for one shape (what was measured before a failure stays in it); `file`: a GGUF
 * file to run as it is instead of the shape's checkpoint.
 */
async function benchShape(
  shape: string,
  result: ShapeResult,
  { mix, file, layers }: { mix?: Mix; file?: string; layers?: number } = {},
): Promise<void> {
  const dir = file ?? await shapeModel(shape, {
    log,
    ...(modelDir !== undefined ? { modelDir } : {}),
    ...(mix !== undefined ? { mix } : {}),
    ...(layers !== undefined ? { layers } : {}),
    ...(flags.quantizer !== undefined ? { quantizer: flags.quantizer as Quantizer } : {}),
  });
  result.model_dir = relative(Deno.cwd(), dir) || "."; // no machine's home in the JSON
  const manifest = mix || file ? undefined : await readManifest(dir);
  if (manifest) result.checkpoint_sha256 = manifest.sha256;
  const files = dirFiles(dir);
  const { config } = await openCheckpoint(files);
  result.params = tensorSpecs(config).reduce((n, t) => n + elements(t), 0);
  const wb = result.weight_bytes = await weightBytes(files);

  log(`${shape}: dispatches and encode time per decode step`);
  result.step = await forwardStats(gpu, files, batches, encodeIters);

  // The KV cache holds every batch's streams at once, the longest prompt, and 4096 positions
  // at least: the bench's context cap (the config's own context may be 128k).
  const perStream = 16 * Math.ceil((PROMPT + tokens + 1) / 16);
  const kvPositions = Math.max(
    4096,
    Math.max(...batches) * perStream,
    ...prefillLengths.map((l) => 16 * Math.ceil((l + 1) / 16)),
    ...(contexts
      ? [contextPositions({ contexts, tokens, maxContext: config.maxPositionEmbeddings })]
      : []),
  );
  const kiln = new KilnRunner({
    gpu,
    kvPositions,
    maxNumSeqs: Math.max(...batches),
    ...(maxBatched ? { maxNumBatchedTokens: maxBatched } : {}),
    ...(pipelineDepth ? { pipelineDepth } : {}),
  });
  await kiln.setup(dir);
  try {
    const c = kiln.config!;
    const chunk = c.max_num_batched_tokens ?? 0;
    result.engine = {
      max_num_batched_tokens: chunk,
      max_num_seqs: c.max_num_seqs ?? 0,
      kv_cache_positions: kvPositions,
      kv_cache_block_size: c.kv_cache_block_size ?? 16,
      context_length: c.context_length ?? 0,
      load_seconds: kiln.engine!.modelLoadTime,
    };
    let salt = 10;
    const prompts = (b: number) =>
      Array.from({ length: b }, () => prompt(PROMPT, config.vocabSize, salt++));
    result.decode = [];
    for (const b of batches) {
      log(`${shape}: decode, batch ${b}`);
      await kiln.run(prompts(b), Math.min(3, tokens)); // plans and pipelines for this batch
      const r = await kiln.run(prompts(b), tokens);
      const timed = r.timed;
      result.decode.push({
        batch: b,
        tokens_per_stream: tokens,
        timed_tokens: timed,
        seconds: r.seconds,
        tokens_per_s: timed / r.seconds,
        max_steps_in_flight: kiln.maxInFlight,
      });
    }
    const guidedBatches = batches.filter((b) => b === 1 || b === 8);
    if (guidedBatches.length > 0 && await hasTokenizer(files)) {
      const o = { batches: guidedBatches, tokens, rounds, prompts, log };
      result.guided = await guidedBench(kiln, dir, files, config.vocabSize, o).catch((e) => {
        result.skipped.push(`guided: ${(e as Error).message}`);
        return undefined;
      });
    } else result.skipped.push("guided: needs a tokenizer (--model DIR) and batch 1 or 8");
    result.prefill = [];
    const prefillRuns = quick ? 1 : 3;
    const warm = new Set([PROMPT]); // prompt lengths whose plans the decode runs built
    for (const length of prefillLengths) {
      log(`${shape}: prefill ${length} tokens`);
      // Warm up the chunk's plans and pipelines with a shorter prompt (chunk + 1 at most).
      const w = Math.min(length, chunk + 1);
      if (!warm.has(w)) await kiln.prefill(prompt(w, config.vocabSize, salt++));
      warm.add(w);
      const ttft: number[] = [];
      for (let i = 0; i < prefillRuns; i++) {
        ttft.push((await kiln.prefill(prompt(length, config.vocabSize, salt++))).seconds);
      }
      const m = median(ttft);
      result.prefill.push(withFlops(
        {
          prompt_tokens: length,
          ttft_s: m,
          tokens_per_s: length / m,
          runs: prefillRuns,
          ttft_s_all: ttft,
        },
        prefillFlopsPerToken(config),
        fma,
      ));
    }
    if (contexts) {
      log(`${shape}: decode at contexts ${contexts.join(", ")}`);
      const c = await contextBench(kiln, {
        contexts,
        tokens,
        maxContext: config.maxPositionEmbeddings,
        prompt: (length) => prompt(length, config.vocabSize, salt++),
        log,
      });
      result.contexts = c.results;
      result.skipped.push(...c.skipped);
    }
    const b1 = result.decode.find((d) => d.batch === 1);
    if (b1) {
      const gbps = (wb.per_decode_step * b1.tokens_per_s) / 1e9;
      result.weight_reads = {
        bytes_per_step: wb.per_decode_step,
        step_seconds: 1 / b1.tokens_per_s,
        gb_per_s: gbps,
        probe_gb_per_s: probe.gb_per_s,
        ratio_to_probe: gbps / probe.gb_per_s,
      };
    } else result.skipped.push("weight reads: needs batch 1 in --batches");
    if (peers.length > 0) {
      log(`${shape}: peers`);
      const comparison = await comparePeers(kiln, peers, dir, {
        prompt: (length, s) => prompt(length, config.vocabSize, 5000 + s),
        promptTokens: PROMPT,
        greedyTokens: Math.min(tokens, 16),
        decodeTokens: tokens,
        batches,
        prefill: prefillLengths,
        rounds,
        threads: peerThreads,
      }, log);
      result.peers = comparison.peers;
      result.peer_machine = comparison.machine;
    }
  } finally {
    await kiln.close();
  }
}

const results: ShapeResult[] = [];
const depths: (number | undefined)[] = flags.layers ?? [undefined];
const runMixes = flags["quant-only"] ? mixes : [undefined, ...mixes];
for (const shape of shapes) {
  for (const layers of depths) {
    for (const mix of runMixes) {
      const base = layers === undefined ? shape : `${shape}-first${layers}`;
      const name = mix ? `${base}-${mix}` : base;
      const result: ShapeResult = { shape: name, model_dir: modelDir ?? "", skipped: [] };
      results.push(result);
      try {
        if (layers !== undefined) {
          const of = parseConfig(
            await Deno.readTextFile(new URL(`./shapes/${shape}.json`, import.meta.url)),
          ).numLayers;
          result.slice = { shape, layers, of, weights: mix ?? "f16" };
        }
        await benchShape(shape, result, {
          ...(mix ? { mix } : {}),
          ...(layers !== undefined ? { layers } : {}),
        });
      } catch (e) {
        log(`${name}: ${(e as Error).message}`);
        result.error = (e as Error).message;
      }
    }
  }
}
for (const file of flags.gguf ?? []) {
  const name = file.replace(/^.*\//, "").replace(/\.gguf$/i, "");
  const result: ShapeResult = { shape: name, model_dir: file, skipped: [] };
  results.push(result);
  try {
    // Absolute: the peers run from tools/peers/.
    await benchShape(name, result, { file: resolve(file) });
  } catch (e) {
    log(`${name}: ${(e as Error).message}`);
    result.error = (e as Error).message;
  }
}
// What the full run measures that this one did not.
const notRun = [
  ...[1, 8, 32].filter((b) => !batches.includes(b)).map((b) => `decode at batch ${b}`),
  ...[512, 2048].filter((l) => !prefillLengths.includes(l)).map((l) => `${l}-token prefill`),
  ...(tokens < 128 ? [`128 tokens per stream (ran ${tokens})`] : []),
];
for (const r of results) {
  if (notRun.length && !r.error) r.skipped.push(`not run: ${notRun.join(", ")}`);
}

const report: BenchReport = {
  bench: "kiln-bench",
  adapter,
  date: new Date().toISOString(),
  runtime_data: runtimeData(gpu.caps),
  deno: Deno.version.deno,
  options: {
    quick,
    batches,
    tokens,
    prefill: prefillLengths,
    ...(contexts ? { contexts } : {}),
    rounds,
    encode_iters: encodeIters,
    decode_prompt_tokens: PROMPT,
    pipeline_depth: pipelineDepth ?? "adaptive",
    peers: peers.map((p) => p.name),
    ...(peers.length > 0 ? { peer_threads: peerThreads } : {}),
    engine: flags.engine ?? "webgpu",
    ...(flags.caption ? { caption: flags.caption } : {}),
  },
  machine: {
    cores: navigator.hardwareConcurrency,
    loadavg_1m_start: loadStart,
    loadavg_1m_end: machineProbe.loadavg() ?? null,
  },
  probe,
  fma_probe: fma,
  shapes: results,
};
const slices = perLayer(results);
if (slices.length > 0) report.slices = slices;
const out = flags.out ??
  new URL(`../results/bench-${adapterSlug(adapter)}.json`, import.meta.url).pathname;
await Deno.writeTextFile(out, JSON.stringify(report, null, 2) + "\n");
const svg = out.replace(/\.json$/, "") + ".svg";
await Deno.writeTextFile(svg, renderBenchChart(report));
log("");
log(formatTable(report));
log(`\nwrote ${out} and ${svg}`);
gpu.device.destroy();
