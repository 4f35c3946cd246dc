/**
 * The model file or folder the bench runs for a shape: its random-weight checkpoint
 * (`checkpoint.ts`; its first N layers with `layers`), or a GGUF of it quantized by Kiln's
 * converter or by llama.cpp's own quantizer (`llama_model_quantize` through the peers' libllama,
 * on the checkpoint's F16 GGUF), made once and cached beside the checkpoint.
 */
import { describeReport, quantizeToFile } from "../../src/adapters/deno/quantize.ts";
import { GGUF_MIXES, type GgufMix } from "../../src/convert/quant_mix.ts";
import { ensureCheckpoint } from "./checkpoint.ts";

/** Mixes only llama.cpp's quantizer makes here (its file types, lower-cased). */
export const LLAMA_ONLY_MIXES = ["q2_k"] as const;
export type Mix = GgufMix | (typeof LLAMA_ONLY_MIXES)[number];
export const ALL_MIXES: readonly Mix[] = [...GGUF_MIXES, ...LLAMA_ONLY_MIXES];
export type Quantizer = "kiln" | "llama.cpp";

export interface ShapeModelOptions {
  /** An HF folder the user gave instead of the shape's checkpoint. */
  modelDir?: string;
  mix?: Mix;
  layers?: number;
  quantizer?: Quantizer;
  log: (line: string) => void;
}

/** Whether Kiln's converter writes `mix`. */
export const kilnWrites = (mix: Mix): mix is GgufMix =>
  (GGUF_MIXES as readonly string[]).includes(mix);

/**
 * The shape's checkpoint folder (its first `layers` layers when given), or with `mix` a GGUF of it
 * quantized so by `quantizer` (default Kiln's).
 */
export async function shapeModel(shape: string, o: ShapeModelOptions): Promise<string> {
  const { modelDir, mix, layers, log } = o;
  const dir = modelDir ??
    await ensureCheckpoint(shape, { log, ...(layers !== undefined ? { layers } : {}) });
  if (mix === undefined) return dir;
  // Beside the generated checkpoints (never in a model folder the user gave); delete it to
  // quantize again after the source changed.
  const cache = modelDir === undefined
    ? `${dir}/`
    : new URL(`../../.cache/kiln-bench/${shape}/`, import.meta.url).pathname;
  await Deno.mkdir(cache, { recursive: true });
  const byLlama = o.quantizer === "llama.cpp";
  const file = `${cache}${byLlama ? "llamacpp" : "kiln"}-${mix}.gguf`;
  try {
    await Deno.stat(file);
  } catch {
    log(`${shape}: quantizing to ${mix} (${byLlama ? "llama.cpp's" : "Kiln's"} quantizer)`);
    if (byLlama) await llamaQuantize(dir, file, mix);
    else if (kilnWrites(mix)) {
      for (const line of describeReport(file, await quantizeToFile(dir, file, mix))) log(line);
    } else throw new Error(`${mix}: Kiln's converter does not write it`);
  }
  return file;
}

/** `dir` converted to an F16 GGUF (the peers' cached copy), then quantized by libllama. */
async function llamaQuantize(dir: string, file: string, mix: Mix): Promise<void> {
  const { ggufFor } = await import("../../tools/peers/llama_cpp.ts");
  const { openLlamaQuantizer } = await import("../../tools/peers/llama_lib.ts");
  const f16 = await ggufFor(dir);
  const q = await openLlamaQuantizer();
  try {
    const why = q.quantize(f16, `${file}.partial`, mix.toUpperCase() as Uppercase<Mix>);
    if (why !== undefined) throw new Error(`llama.cpp's quantizer: ${why}`);
  } finally {
    q.close();
  }
  await Deno.rename(`${file}.partial`, file);
}
