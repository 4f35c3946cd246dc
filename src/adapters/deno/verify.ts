/**
 * `deno task verify --model DIR [--reference FILE] [--kv-dtype f16|f32]`: load a checkpoint on
 * the GPU Deno finds, run every prompt of the reference file, print one JSON line per prompt and
 * `verify: PASS` or `verify: FAIL` (exit 0 or 1; 2 on bad usage or a model that cannot load).
 */
import { acquireGpu } from "../../gpu/device.ts";
import { GpuModel } from "../../model/gpu_model.ts";
import { parseReference, verifyModel } from "../../model/verify.ts";
import { dirFiles } from "./file_source.ts";
import { runCli } from "./flags.ts";
import { KERNEL_PATHS_ENV } from "./kernel_paths.ts";

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
      help: "the reference logits (default: DIR/reference.json)",
    },
    "kv-dtype": { type: "enum", choices: ["f16", "f32"], help: "the KV cache's dtype" },
  },
  env: KERNEL_PATHS_ENV,
});
const dir = flags.model;
const kvDtype = flags["kv-dtype"];
const refPath = flags.reference ?? `${dir}/reference.json`;
try {
  const reference = parseReference(await Deno.readTextFile(refPath));
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
