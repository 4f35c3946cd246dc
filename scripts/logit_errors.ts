/**
 * The measurements behind `verify`'s bounds (`src/reference/verify.ts`): for every reference model
 * (the three HF fixtures and fortune) and every GGUF type the parity test runs, the logit error
 * of the GPU path on the adapter Deno finds, per KV cache dtype, printed one line per prompt:
 *
 * - `gpu~hf`: Kiln on the GPU against HF's `reference.json` (what `deno task verify` checks);
 * - `gpu~f64`: Kiln on the GPU against Kiln's float64 reference pass, teacher-forced with the
 *   same tokens (the GPU's own arithmetic error, without the reference file's);
 * - `f64~hf`: the float64 reference pass against HF's file (the file's own error);
 * - `gguf`: a GGUF of the model (converted in memory) on the GPU against the float64 pass on its
 *   dequantized weights.
 *
 * Columns: max |err|, max |reference logit|, max |err| / max(1, max |ref|), relative L2.
 * `deno run -A scripts/logit_errors.ts [--gguf-only | --no-gguf]` (`KILN_KERNEL_PATHS=gpu`: through
 * a GPU's kernels on any adapter).
 */
import { dirFiles } from "../src/adapters/deno/file_source.ts";
import { runCli } from "../src/adapters/deno/flags.ts";
import { KERNEL_PATHS_ENV } from "../src/adapters/deno/kernel_paths.ts";
import { acquireGpu } from "../src/gpu/device.ts";
import type { KvDtype } from "../src/gpu/kernels/attention.ts";
import { openCheckpoint } from "../src/model/checkpoint.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../src/convert/convert.ts";
import type { GgufMix } from "../src/convert/quant_mix.ts";
import { GpuModel } from "../src/runtime/gpu_model.ts";
import { buildReference } from "../src/reference/file.ts";
import { ReferenceModel } from "../src/reference/model.ts";
import { fileListFiles } from "../src/formats/source.ts";
import {
  parseReference,
  type PromptResult,
  type Reference,
  verifyLogits,
  verifyModel,
} from "../src/reference/verify.ts";
import { MODELS } from "../test/support/models.ts";

const { flags, env, fail } = runCli({
  name: "logit_errors",
  command: "deno run -A scripts/logit_errors.ts",
  about: "The logit errors behind verify's bounds, one line per prompt.",
  flags: {
    "gguf-only": { type: "boolean", help: "only the GGUF comparisons" },
    "no-gguf": { type: "boolean", help: "leave the GGUF comparisons out" },
  },
  env: KERNEL_PATHS_ENV,
});
if (flags["gguf-only"] && flags["no-gguf"]) fail("--gguf-only and --no-gguf: give one of them");
const ggufOnly = flags["gguf-only"];
const noGguf = flags["no-gguf"];
const paths = env.KILN_KERNEL_PATHS;
const gpu = await acquireGpu({ label: "logit-errors", ...(paths ? { paths } : {}) });
console.log(`adapter: ${gpu.caps.adapter} (${gpu.caps.paths} kernel paths)`);
const KVS: KvDtype[] = ["f32", "f16"];
const NONE = { maxAbs: Infinity, relL2: Infinity };

function line(what: string, r: PromptResult): void {
  const e = (x: number) => x.toExponential(2);
  console.log(
    `${what.padEnd(40)} p${r.prompt} max|err| ${e(r.max_abs_err)} max|ref| ${
      r.max_abs_ref.toFixed(1).padStart(5)
    } scaled ${e(r.max_abs_err / Math.max(1, r.max_abs_ref))} relL2 ${e(r.rel_l2)}`,
  );
}

/** `hf` with the float64 pass's logits in place of HF's (same prompts and greedy tokens). */
function f64Reference(model: ReferenceModel, hf: Reference): Reference {
  return {
    ...hf,
    prompts: hf.prompts.map((p) => {
      const got = model.teacherForced(p);
      const steps = got.steps.map((r) => Array.from(r));
      const margins = steps.map((r) => {
        const sorted = [...r].sort((a, b) => b - a);
        return sorted[0]! - sorted[1]!;
      });
      return {
        ...p,
        logits: got.prompt.map((r) => Array.from(r)),
        greedy_step_logits: steps,
        greedy_margins: margins,
      };
    }),
  };
}

async function gpuAgainst(
  checkpoint: Awaited<ReturnType<typeof openCheckpoint>>,
  reference: Reference,
  what: string,
): Promise<void> {
  for (const kvDtype of KVS) {
    const model = await GpuModel.fromCheckpoint(gpu, checkpoint, { kvDtype });
    try {
      await verifyModel(model, reference, (r) => line(`${what} kv ${kvDtype}`, r));
    } finally {
      model.destroy();
    }
  }
}

for (const m of MODELS) {
  const dir = m.dir.pathname;
  const hf = parseReference(await Deno.readTextFile(`${dir}reference.json`));
  if (!ggufOnly) {
    const checkpoint = await openCheckpoint(dirFiles(dir));
    const ref = await ReferenceModel.load(checkpoint.config, checkpoint.weights);
    await verifyLogits(
      (p) => Promise.resolve(ref.teacherForced(p)),
      hf,
      NONE,
      (r) => line(`${m.name} f64~hf`, r),
    );
    await gpuAgainst(checkpoint, hf, `${m.name} gpu~hf`);
    await gpuAgainst(checkpoint, f64Reference(ref, hf), `${m.name} gpu~f64`);
  }
  if (noGguf) continue;
  const mixes: GgufMix[] = m.name === "fortune"
    ? ["q8_0", "q4_0", "q6_k", "q4_k_m"]
    : ["q8_0", "q4_0"];
  for (const mix of mixes) {
    const parts: Uint8Array[] = [];
    await writeHfAsGguf(await readHfCheckpoint(dirFiles(dir)), (b) => void parts.push(b.slice()), {
      name: m.name,
      mix,
    });
    const file = new File(parts as BlobPart[], `${m.name}-${mix}.gguf`);
    const checkpoint = await openCheckpoint(fileListFiles([file]));
    const ref = await ReferenceModel.load(checkpoint.config, checkpoint.weights);
    const prompts = hf.prompts.map((p) => p.input_ids);
    const reference = buildReference(ref, checkpoint.weights, m.name, prompts, 12);
    await gpuAgainst(checkpoint, reference, `${m.name} gguf ${mix}`);
  }
}
