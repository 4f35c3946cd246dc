/**
 * `deno task verify --model DIR [--reference FILE] [--kv-dtype f16|f32]`: load a checkpoint on
 * the GPU Deno finds, run every prompt of the reference file, print one JSON line per prompt and
 * `verify: PASS` or `verify: FAIL` (exit 0 or 1; 2 on bad usage or a model that cannot load).
 * The reference is a `reference.json` or a logits manifest (a family fixture's `manifest.json`,
 * llama.cpp's logits in the raw f32 file it names, beside it).
 */
import { acquireGpu } from "../../gpu/device.ts";
import { GpuModel } from "../../runtime/gpu_model.ts";
import { parseReference, type Reference, verifyModel } from "../../reference/verify.ts";
import { isLogitsManifest, logitsManifestReference } from "../../reference/file.ts";
import { dirFiles } from "./file_source.ts";
import { runCli } from "./flags.ts";
import { KERNEL_PATHS_ENV } from "./kernel_paths.ts";
import { requireModelPath } from "./model_path.ts";

const { flags, env } = runCli({
  name: "verify",
  command: "deno task verify",
  about: "A checkpoint on the GPU Deno finds against reference logits: one JSON line per " +
    "prompt, then verify: PASS or verify: FAIL (exit 0 or 1; 2 on bad usage or a model that " +
    "cannot load).",
  flags: {
    model: { type: "string", arg: "DIR", required: true, help: "the checkpoint folder" },
    reference: {
      type: "string",
      arg: "FILE",
      help: "reference.json or a logits manifest (default: DIR/reference.json)",
    },
    "kv-dtype": { type: "enum", choices: ["f16", "f32"], help: "the KV cache's dtype" },
  },
  env: KERNEL_PATHS_ENV,
});
const dir = flags.model;
requireModelPath("verify", dir);
const kvDtype = flags["kv-dtype"];
const refPath = flags.reference ?? `${dir}/reference.json`;
/** A reference.json, or a logits manifest with the logits file it names read from beside it. */
async function readReference(path: string): Promise<Reference> {
  const text = await Deno.readTextFile(path);
  const json = JSON.parse(text);
  if (!isLogitsManifest(json)) return parseReference(text);
  const file = new URL(json.logits.file, new URL(path, `file://${Deno.cwd()}/`));
  return logitsManifestReference(json, await Deno.readFile(file));
}

try {
  const reference = await readReference(refPath);
  const paths = env.KILN_KERNEL_PATHS;
  const gpu = await acquireGpu({ label: "kiln-verify", ...(paths ? { paths } : {}) });
  const model = await GpuModel.load(gpu, dirFiles(dir), kvDtype ? { kvDtype } : {});
  const { passed, dtype } = await verifyModel(
    model,
    reference,
    (r) => console.log(JSON.stringify(r)),
  );
  console.error(
    `adapter: ${gpu.caps.adapter}; ${gpu.caps.paths} kernel paths; weights ${dtype}; ` +
      `KV cache ${model.kvDtype}`,
  );
  model.destroy();
  console.log(`verify: ${passed ? "PASS" : "FAIL"}`);
  Deno.exit(passed ? 0 : 1);
} catch (e) {
  console.error(`verify: ${(e as Error).name}: ${(e as Error).message}`);
  console.log("verify: FAIL");
  Deno.exit(2);
}
