/**
 * A family fixture's HF folder (`test/fixtures/families/<family>/hf`) converted by Kiln to Q8_0
 * and Q4_K_M GGUFs (with the fixtures' byte tokenizer, so llama.cpp loads them), then run by
 * llama.cpp (teacher-forced logits, CPU, F32 KV cache) and by Kiln (float64 reference and the
 * GPU forward) on the same files. Prints the largest logit differences and the positions whose
 * argmax agrees. llama.cpp's CPU products round the activations to 8-bit blocks against
 * quantized weights, so the two differ by far more than Kiln's f32 rounding: compare a family
 * with a dense one (qwen3) rather than with zero.
 *
 *   deno run -A bench/peers/family_quantized.ts [--families qwen3moe,qwen3]
 */
import { fileListFiles } from "../../src/formats/source.ts";
import { openCheckpoint } from "../../src/model/checkpoint.ts";
import { ReferenceModel } from "../../src/reference/model.ts";
import {
  ggufMetadata,
  ggufTensors,
  planTensors,
  readHfCheckpoint,
} from "../../src/convert/convert.ts";
import type { GgufMix } from "../../src/convert/quant_mix.ts";
import { writeGguf } from "../../src/convert/writer.ts";
import { acquireGpu } from "../../src/gpu/device.ts";
import { GpuModel } from "../../src/runtime/gpu_model.ts";
import { Forward } from "../../src/runtime/forward.ts";
import { tokenizerMeta } from "./families/build.ts";
import { llamaCppLogitsEach } from "./llama_cpp.ts";
import { runCli } from "../../src/adapters/deno/flags.ts";

const MIXES: GgufMix[] = ["q8_0", "q4_k_m"];
const FIXTURES = new URL("../../test/fixtures/families/", import.meta.url);

const argmax = (r: ArrayLike<number>) => {
  let b = 0;
  for (let j = 1; j < r.length; j++) if (r[j]! > r[b]!) b = j;
  return b;
};

const { flags } = runCli({
  name: "family_quantized",
  command: "deno run -A bench/peers/family_quantized.ts",
  about: "Family fixtures converted by Kiln to Q8_0 and Q4_K_M, run by llama.cpp and by Kiln.",
  flags: {
    families: {
      type: "list",
      default: ["qwen3moe", "qwen3"],
      help: "the family fixtures (folders of test/fixtures/families/)",
    },
  },
});

const gpu = await acquireGpu({ label: "family-quantized" });
for (const family of flags.families) {
  const dir = new URL(`${family}/`, FIXTURES);
  const tokens: number[] =
    JSON.parse(await Deno.readTextFile(new URL("manifest.json", dir))).tokens;
  const hf = await Promise.all(
    ["config.json", "model.safetensors"].map(async (f) =>
      new File([await Deno.readFile(new URL(`hf/${f}`, dir))], f)
    ),
  );
  const ck = await readHfCheckpoint(fileListFiles(hf));
  const V = ck.config.vocabSize;
  const tmp = await Deno.makeTempDir();
  try {
    const paths: string[] = [];
    for (const mix of MIXES) {
      const parts: Uint8Array[] = [];
      const meta = {
        ...ggufMetadata(ck, { mix, name: "kiln-tiny-fixture" }),
        ...tokenizerMeta(V),
      };
      await writeGguf(
        (b) => void parts.push(b.slice()),
        meta,
        ggufTensors(ck, planTensors(ck, mix)),
      );
      paths.push(`${tmp}/${mix}.gguf`);
      await Deno.writeFile(
        paths[paths.length - 1]!,
        new Uint8Array(await new Blob(parts as BlobPart[]).arrayBuffer()),
      );
    }
    const llama = await llamaCppLogitsEach(paths, tokens, V, { f32: true });
    for (const [i, path] of paths.entries()) {
      const file = new File([await Deno.readFile(path)], `${MIXES[i]}.gguf`);
      const c = await openCheckpoint(fileListFiles([file]));
      const ref = (await ReferenceModel.load(c.config, c.weights)).logits(
        tokens,
      );
      const model = await GpuModel.fromCheckpoint(gpu, c, { kvDtype: "f32" });
      const fwd = new Forward(model);
      try {
        const pos = tokens.map((_, t) => t);
        const out = await fwd.run({
          tokens,
          positions: pos,
          slots: pos,
          tableOffsets: pos.map(() => 0),
          blockTable: Array.from({
            length: Math.ceil(tokens.length / model.blockSize),
          }, (_, b) => b),
          logitRows: pos,
        });
        let eRef = 0, eGpu = 0, agree = 0;
        tokens.forEach((_, t) => {
          const l = llama[i]![t]!, g = out.subarray(t * V, (t + 1) * V);
          for (let j = 0; j < V; j++) {
            eRef = Math.max(eRef, Math.abs(ref[t]![j]! - l[j]!));
            eGpu = Math.max(eGpu, Math.abs(g[j]! - l[j]!));
          }
          if (argmax(g) === argmax(l)) agree++;
        });
        console.log(JSON.stringify({
          family,
          mix: MIXES[i],
          float64_vs_llama_cpp: Number(eRef.toPrecision(3)),
          gpu_vs_llama_cpp: Number(eGpu.toPrecision(3)),
          argmax_agree: `${agree}/${tokens.length}`,
        }));
      } finally {
        fwd.destroy();
        model.destroy();
      }
    }
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}
