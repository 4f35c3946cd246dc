/**
 * `deno task verify --model DIR --reference FILE`: load a checkpoint on the GPU Deno finds,
 * run every prompt of the reference file, print one JSON line per prompt and `verify: PASS`
 * or `verify: FAIL` (exit 0 or 1; 2 on bad usage or a model that cannot load).
 */
import { acquireGpu } from "../../gpu/device.ts";
import { GpuModel } from "../../model/gpu_model.ts";
import { parseReference, verifyModel } from "../../model/verify.ts";
import { dirFiles } from "./file_source.ts";

function arg(name: string): string | undefined {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0
    ? Deno.args[i + 1]
    : Deno.args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1];
}

const dir = arg("model");
const kvDtype = arg("kv-dtype");
const refPath = arg("reference") ?? (dir ? `${dir}/reference.json` : undefined);
if (!dir || !refPath || (kvDtype !== undefined && kvDtype !== "f16" && kvDtype !== "f32")) {
  console.error("usage: deno task verify --model DIR [--reference FILE] [--kv-dtype f16|f32]");
  Deno.exit(2);
}
try {
  const reference = parseReference(await Deno.readTextFile(refPath));
  const gpu = await acquireGpu({ label: "kiln-verify" });
  const model = await GpuModel.load(gpu, dirFiles(dir), kvDtype ? { kvDtype } : {});
  const { passed, dtype } = await verifyModel(
    model,
    reference,
    (r) => console.log(JSON.stringify(r)),
  );
  console.error(`adapter: ${gpu.caps.adapter}; weights ${dtype}; KV cache ${model.kvDtype}`);
  model.destroy();
  console.log(`verify: ${passed ? "PASS" : "FAIL"}`);
  Deno.exit(passed ? 0 : 1);
} catch (e) {
  console.error(`verify: ${(e as Error).name}: ${(e as Error).message}`);
  console.log("verify: FAIL");
  Deno.exit(2);
}
