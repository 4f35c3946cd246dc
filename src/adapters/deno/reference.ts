/**
 * `deno task reference --model DIR|FILE.gguf --out REF.json [--prompts-from OTHER.json]
 * [--greedy N]`: float64 reference logits of a checkpoint (safetensors directory) or a GGUF
 * (dequantized) on the CPU, in the shared fixtures' `reference.json` format, for
 * `deno task verify`. Prompts: the input_ids of `--prompts-from` (default: the `reference.json`
 * beside the model, if any), else three seeded prompts of the vocabulary. Greedy steps: `--greedy`,
 * else the source reference's, else 8. Exit 0, or 2 on bad usage or a model that cannot load.
 */
import { openCheckpoint } from "../../model/checkpoint.ts";
import { buildReference, seededPrompts } from "../../reference/file.ts";
import { ReferenceModel } from "../../reference/model.ts";
import { modelName } from "../../formats/source.ts";
import { parseReference, type Reference } from "../../reference/verify.ts";
import { dirFiles } from "./file_source.ts";
import { runCli } from "./flags.ts";
import { requireModelPath } from "./model_path.ts";

const { flags } = runCli({
  name: "reference",
  command: "deno task reference",
  about: "Float64 reference logits of a checkpoint or a (dequantized) GGUF on the CPU, in the " +
    "fixtures' reference.json format, for deno task verify. Exit 0, or 2 on bad usage or a " +
    "model that cannot load.",
  flags: {
    model: {
      type: "string",
      arg: "DIR|FILE.gguf",
      required: true,
      help: "a checkpoint folder or GGUF file",
    },
    out: { type: "string", arg: "REF.json", required: true, help: "the file to write" },
    "prompts-from": {
      type: "string",
      arg: "REF.json",
      help: "take the prompts (input_ids) of this reference (default: reference.json beside the " +
        "model, else three seeded prompts)",
    },
    greedy: {
      type: "integer",
      min: 0,
      help: "greedy steps per prompt (default: the source reference's, else 8)",
    },
  },
});

async function exists(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isFile;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

async function open(path: string) {
  const files = dirFiles(path);
  const { config, weights } = await openCheckpoint(files);
  const dir = files.gguf === undefined ? files.location : path.slice(0, path.lastIndexOf("/") + 1);
  return { config, weights, name: modelName(path), dir: dir || "./" };
}

const modelPath = flags.model;
requireModelPath("reference", modelPath);
const outPath = flags.out;
const greedy = flags.greedy;
try {
  const t0 = performance.now();
  const { config, weights, name, dir } = await open(modelPath);
  const beside = `${dir}reference.json`;
  const fromPath = flags["prompts-from"] ?? (await exists(beside) ? beside : undefined);
  const source: Reference | undefined = fromPath === undefined
    ? undefined
    : parseReference(await Deno.readTextFile(fromPath));
  const prompts = source?.prompts.map((p) => p.input_ids) ?? seededPrompts(config);
  const steps = greedy ?? source?.prompts[0]?.greedy_tokens.length ?? 8;
  const model = await ReferenceModel.load(config, weights);
  const t1 = performance.now();
  console.error(
    `reference: ${name} (${config.arch}) read in ${
      ((t1 - t0) / 1000).toFixed(2)
    } s; ${prompts.length} prompts from ${fromPath ?? "a fixed seed"}, ${steps} greedy steps each`,
  );
  let t = t1;
  const ref = buildReference(model, weights, name, prompts, steps, (i, p) => {
    const now = performance.now();
    console.error(
      `  prompt ${i}: ${p.input_ids.length} tokens, greedy [${p.greedy_tokens}] in ${
        ((now - t) / 1000).toFixed(2)
      } s`,
    );
    t = now;
  });
  await Deno.writeTextFile(outPath, JSON.stringify(ref));
  console.error(`reference: wrote ${outPath} (dtype ${ref.dtype})`);
} catch (e) {
  console.error(`reference: ${(e as Error).name}: ${(e as Error).message}`);
  Deno.exit(2);
}
