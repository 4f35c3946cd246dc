/**
 * A tiny random Mistral checkpoint with a sliding window on every layer (or, with `layerTypes`,
 * on the layers named `sliding_attention` only), and its greedy tokens from the plain
 * single-sequence loop (`generateTokens`), whose block table keeps every block: the reference
 * for an engine that releases blocks the window no longer reaches.
 */
import { type Checkpoint, openCheckpoint } from "../../src/model/checkpoint.ts";
import { generateTokens } from "../../src/runtime/generate.ts";
import { GpuModel } from "../../src/runtime/gpu_model.ts";
import { fileListFiles, type ModelFiles } from "../../src/formats/source.ts";
import { testGpu } from "./gpu.ts";
import { tinyFamilyFiles } from "./tiny_family.ts";

/** The window of the checkpoint's layers. */
export const WINDOW = 6;

/** The checkpoint's shape (also the Mistral family test's). */
export const SHAPE = {
  hiddenSize: 32,
  intermediateSize: 64,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 8,
  vocabSize: 64,
  attentionBias: false,
  tieWordEmbeddings: false,
};

/** The checkpoint's files; `layerTypes` (HF `layer_types`) makes some layers global. */
export function windowModelFiles(layerTypes?: string[]): ModelFiles {
  const { files, config } = tinyFamilyFiles({ arch: "mistral", shape: SHAPE, std: 0.5 });
  const json = {
    ...config,
    sliding_window: WINDOW,
    ...(layerTypes ? { layer_types: layerTypes } : {}),
  };
  return fileListFiles([new File([JSON.stringify(json)], "config.json"), files[1]!]);
}

/** The checkpoint, opened. */
export function windowModel(layerTypes?: string[]): Promise<Checkpoint> {
  return openCheckpoint(windowModelFiles(layerTypes));
}

/** A prompt of `n` tokens starting at `first` (distinct `first`s share no prefix block). */
export const windowPrompt = (first: number, n: number): number[] =>
  Array.from({ length: n }, (_, i) => (first + i * 37) % SHAPE.vocabSize);

/** `n` greedy tokens after `prompt` from `generateTokens`, every block kept. */
export async function referenceTokens(prompt: number[], n: number): Promise<number[]> {
  const ck = await windowModel();
  const model = await GpuModel.fromCheckpoint(await testGpu(), ck, { blockSize: 4, kvBlocks: 32 });
  try {
    const out: number[] = [];
    for await (const t of generateTokens(model, prompt, { maxTokens: n, temperature: 0 })) {
      out.push(t.token);
    }
    return out;
  } finally {
    model.destroy();
  }
}
