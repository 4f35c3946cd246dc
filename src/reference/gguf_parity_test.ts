/**
 * Quantized GGUF models on the GPU against float64 logits computed on their dequantized
 * weights: the shared fixtures and fortune, quantized by Kiln's own converter in memory, each
 * verified like a safetensors checkpoint (every prompt position and greedy step within the
 * f32 bound of `tolerance`, greedy tokens agreeing where the reference margin is wide).
 */
import { dirFiles } from "../adapters/deno/file_source.ts";
import { openCheckpoint } from "../model/checkpoint.ts";
import { fileListFiles } from "../formats/source.ts";
import { readHfCheckpoint, writeHfAsGguf } from "../convert/convert.ts";
import type { GgufMix } from "../convert/quant_mix.ts";
import { checkParity, type ParityCase, parityCase } from "../../test/support/gguf_parity.ts";
import { PATH_KINDS } from "../gpu/paths.ts";
import { testGpu } from "../../test/support/gpu.ts";
import { MODELS } from "../../test/support/models.ts";

/** `dir` converted to a GGUF `File` with `mix`, never touching the disk. */
async function quantizedFile(dir: string, mix: GgufMix, name: string): Promise<File> {
  const parts: Uint8Array[] = [];
  const ck = await readHfCheckpoint(dirFiles(dir));
  await writeHfAsGguf(ck, (b) => void parts.push(b.slice()), { name, mix });
  return new File(parts as BlobPart[], `${name}-${mix}.gguf`);
}

// The fixtures' hidden sizes (64, 96) take no K-quant (256-element blocks): their q4_k_m files
// fall back as llama.cpp's do (Q4_K to Q5_0, Q6_K to Q8_0), which runs Q5_0 end to end; their
// q6_k files would only repeat q8_0.
const CASES: [typeof MODELS[number], GgufMix[]][] = MODELS.map((m) => [
  m,
  m.name === "fortune" ? ["q8_0", "q4_0", "q6_k", "q4_k_m"] : ["q8_0", "q4_0", "q4_k_m"],
]);

async function prepare(m: typeof MODELS[number], mix: GgufMix): Promise<ParityCase> {
  const files = fileListFiles([await quantizedFile(m.dir.pathname, mix, m.name)]);
  return parityCase(await openCheckpoint(files), `${m.dir.pathname}reference.json`, m.name, 2, 6);
}

for (const [m, mixes] of CASES) {
  for (const mix of mixes) {
    let prepared: Promise<ParityCase> | undefined;
    for (const paths of PATH_KINDS) {
      Deno.test(`${m.name} ${mix}: GGUF logits match float64 on the dequantized weights (${paths} paths)`, async () => {
        const gpu = await testGpu(paths);
        await checkParity(gpu, await (prepared ??= prepare(m, mix)), `${m.name} ${mix}`);
      });
    }
  }
}
