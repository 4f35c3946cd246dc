/**
 * Writes `test/fixtures/llamacpp/greedy.json` and prints it as a table: for each file of the
 * llama.cpp manifest (`llama_quantize.ts`), llama.cpp's greedy tokens (its CPU build,
 * `llama_cpp.ts`) next to Kiln's on the same file, for one prompt of the model's reference.json.
 * Both are also compared with the float64 greedy path on the file's dequantized weights (Kiln's
 * `ReferenceModel`). Informational: a greedy path may fork where the top-2 logits nearly tie, and
 * llama.cpp's CPU build rounds activations to 8 bits before quantized dot products (and keeps
 * an F16 KV cache), so the first divergence is shown with Kiln's margin there. A file Kiln
 * refuses is listed so.
 *
 *   node_modules/.bin/deno run -A bench/peers/llamacpp_greedy.ts [--tokens N]
 */
import { runCli } from "../../src/adapters/deno/flags.ts";
import { EngineError } from "../../src/contract/errors.ts";
import { acquireGpu } from "../../src/gpu/device.ts";
import { openCheckpoint } from "../../src/model/checkpoint.ts";
import { GpuModel } from "../../src/runtime/gpu_model.ts";
import { ReferenceModel } from "../../src/reference/model.ts";
import { fileListFiles } from "../../src/formats/source.ts";
import { parseReference } from "../../src/reference/verify.ts";
import { LLAMACPP_DIR, readManifest } from "../../test/support/llamacpp.ts";
import { MODELS } from "../../test/support/models.ts";
import { kilnGreedy } from "./kiln_greedy.ts";
import { llamaCppGreedyEach } from "./llama_cpp.ts";

/** Which prompt of each model's reference.json (the second: 5 to 64 tokens). */
const PROMPT = 1;

interface Row {
  model: string;
  ftype: string;
  llama_cpp: number[];
  /** Kiln's tokens, or null when Kiln refuses the file. */
  kiln: number[] | null;
  kiln_error?: string;
  /** The float64 greedy path on the dequantized weights (null when Kiln refuses the file). */
  float64: number[] | null;
  /** Tokens equal before the first divergence (all of them when none): Kiln and llama.cpp. */
  same: number;
  /** The same, each against the float64 path. */
  kiln_f64: number;
  llama_f64: number;
  /** Kiln's top-1/top-2 margin at the first divergence. */
  margin?: number;
}

/** How many leading tokens `a` and `b` share. */
function prefix(a: readonly number[], b: readonly number[]): number {
  const k = a.findIndex((t, j) => b[j] !== t);
  return k < 0 ? a.length : k;
}

if (import.meta.main) {
  const { flags } = runCli({
    name: "llamacpp_greedy",
    command: "deno run -A bench/peers/llamacpp_greedy.ts",
    about: "Writes test/fixtures/llamacpp/greedy.json: llama.cpp's and Kiln's greedy tokens " +
      "on each llama.cpp-quantized file.",
    flags: {
      tokens: {
        type: "integer",
        min: 1,
        max: 64,
        default: 16,
        help: "greedy tokens",
      },
    },
  });
  const n = flags.tokens;
  const manifest = await readManifest();
  const gpu = await acquireGpu({ label: "kiln-llamacpp-greedy" });
  const prompts: Record<string, number[]> = {};
  const rows: Row[] = [];
  for (const m of MODELS) {
    const entries = manifest.files.filter((f) => f.model === m.name);
    const ref = parseReference(
      await Deno.readTextFile(new URL("reference.json", m.dir)),
    );
    const prompt = ref.prompts[PROMPT]!.input_ids;
    prompts[m.name] = prompt;
    const paths = entries.map((f) => new URL(f.file, LLAMACPP_DIR).pathname);
    const theirs = await llamaCppGreedyEach(paths, prompt, n);
    for (const [i, f] of entries.entries()) {
      const llama = theirs[i]!;
      const bytes = await Deno.readFile(paths[i]!);
      const files = fileListFiles([new File([bytes], `${f.ftype}.gguf`)]);
      let model: GpuModel;
      let float64: number[];
      try {
        const checkpoint = await openCheckpoint(files);
        const ref = await ReferenceModel.load(
          checkpoint.config,
          checkpoint.weights,
        );
        float64 = ref.prompt(prompt, n).greedy_tokens;
        model = await GpuModel.fromCheckpoint(gpu, checkpoint, {
          kvBlocks: 16,
        });
      } catch (e) {
        const err = EngineError.from(e);
        rows.push({
          model: f.model,
          ftype: f.ftype,
          llama_cpp: llama,
          kiln: null,
          kiln_error: err.message,
          float64: null,
          same: 0,
          kiln_f64: 0,
          llama_f64: 0,
        });
        continue;
      }
      try {
        const ours = await kilnGreedy(model, prompt, n);
        const k = prefix(ours.tokens, llama);
        rows.push({
          model: f.model,
          ftype: f.ftype,
          llama_cpp: llama,
          kiln: ours.tokens,
          float64,
          same: k,
          kiln_f64: prefix(ours.tokens, float64),
          llama_f64: prefix(llama, float64),
          ...(k === n ? {} : { margin: ours.margins[k]! }),
        });
      } finally {
        model.destroy();
      }
    }
  }
  const out = { adapter: gpu.caps.adapter, tokens: n, prompts, rows };
  const lines = JSON.stringify(out, null, 1).replace(
    /\[\s+([\d,\s]+?)\s+\]/g,
    (_, xs: string) => `[${xs.replace(/\s+/g, "")}]`,
  );
  await Deno.writeTextFile(new URL("greedy.json", LLAMACPP_DIR), lines + "\n");
  console.log(
    `| model | ftype | Kiln = llama.cpp (of ${n}) | Kiln's margin there | Kiln = float64 | ` +
      "llama.cpp = float64 |",
  );
  console.log("| --- | --- | --- | --- | --- | --- |");
  for (const r of rows) {
    const cells = r.kiln === null ? ["Kiln refuses the file", "-", "-", "-"] : [
      r.same,
      r.margin === undefined ? "-" : r.margin.toFixed(4),
      r.kiln_f64,
      r.llama_f64,
    ];
    console.log(`| ${[r.model, r.ftype, ...cells].join(" | ")} |`);
  }
}
