/**
 * A model's checkpoint, whatever its format: the config and every tensor (named, shaped and
 * checked as in an HF checkpoint) from a safetensors folder (`config.json` + `model.safetensors`
 * or its shards) or from a GGUF file (`files.gguf`: hyper-parameters from its metadata, tensors
 * possibly block-quantized). Nothing is read beyond headers and metadata here.
 */
import { type ModelConfig, parseConfig } from "./config.ts";
import { type GgufModel, openGgufFiles, splitNames } from "./gguf/load.ts";
import { splitExperts } from "./fused_experts.ts";
import { type ByteTensorInfo, readCheckpoint } from "../formats/safetensors.ts";
import { type DownloadProgress, type ModelFiles, requireText } from "../formats/source.ts";
import { mapWeights, type ModelWeights, type WeightInfo } from "./weights.ts";

/**
 * What a load is doing: downloading the model's files into the local store (bytes; only for a
 * store-backed checkpoint not yet cached whole), uploading weights (progress in bytes), then, in
 * an engine's `start()`, compiling its GPU pipelines (progress in pipelines).
 */
export type LoadPhase = "download" | "weights" | "pipelines";

/**
 * Hears a load: `done` of `total` so far and the item last done, in the units of `phase`: bytes
 * and the file fetched (`download`, with `download` giving rate and time left per file and
 * overall), weight bytes and the tensor uploaded (`weights`), or pipelines and the one compiled
 * (`pipelines`, after the weights, while an engine warms up). Each phase counts from 0 to its own
 * total; callers that only show a bar can ignore `phase` (the bar fills once per phase).
 */
export type LoadProgress = (
  done: number,
  total: number,
  item: string,
  phase: LoadPhase,
  download?: DownloadProgress,
) => void;

export interface Checkpoint {
  format: "safetensors" | "gguf";
  location: string;
  config: ModelConfig;
  weights: ModelWeights<WeightInfo>;
  /** The parsed GGUF files (metadata, tokenizer) when the format is GGUF. */
  gguf?: GgufModel;
  /** The files the weights are read from (GGUF splits, safetensors shards), by name. */
  weightFiles: string[];
}

/**
 * Have `files` make the weight files whole and verified before they are read in bulk
 * (`ModelFiles.prepare`: a store-backed checkpoint downloads them), reporting the download as
 * the `download` phase of `onProgress`.
 */
export async function prepareWeights(
  files: ModelFiles,
  checkpoint: Checkpoint,
  onProgress?: LoadProgress,
): Promise<void> {
  await files.prepare?.(checkpoint.weightFiles, (p) => {
    onProgress?.(p.overall.loaded, p.overall.total, p.file, "download", p);
  });
}

/**
 * Read and check a checkpoint's config and tensor headers, then have `files` prepare the weight
 * files (`prepareWeights`; pass `onProgress` to hear the download).
 */
export async function openCheckpoint(
  files: ModelFiles,
  onProgress?: LoadProgress,
): Promise<Checkpoint> {
  const checkpoint = await readHeaders(files);
  await prepareWeights(files, checkpoint, onProgress);
  return checkpoint;
}

/**
 * Read and check a checkpoint's config and tensor headers only (no weight bytes, no download):
 * what a fit check needs before anything large moves. `prepareWeights` comes next.
 */
export async function readHeaders(files: ModelFiles): Promise<Checkpoint> {
  if (files.gguf !== undefined) {
    const gguf = await openGgufFiles(files);
    return {
      format: "gguf",
      location: gguf.location,
      config: gguf.config,
      weights: mapWeights<WeightInfo>(gguf.config, gguf.tensors),
      gguf,
      weightFiles: splitNames(files.gguf),
    };
  }
  const config = parseConfig(await requireText(files, "config.json"));
  const bytes = new Map<string, ByteTensorInfo>();
  const weightFiles: string[] = [];
  const tensors = await readCheckpoint(
    (name) => {
      if (name.endsWith(".safetensors") && !weightFiles.includes(name)) weightFiles.push(name);
      return files.open(name);
    },
    files,
    bytes,
  );
  return {
    format: "safetensors",
    location: files.location,
    config,
    weights: mapWeights<WeightInfo>(config, splitExperts(config, tensors, bytes), true),
    weightFiles,
  };
}
