/**
 * A model's checkpoint, whatever its format: the config and every tensor (named, shaped and
 * checked as in an HF checkpoint) from a safetensors folder (`config.json` + `model.safetensors`
 * or its shards) or from a GGUF file (`files.gguf`: hyper-parameters from its metadata, tensors
 * possibly block-quantized). Nothing is read beyond headers and metadata here.
 */
import { type ModelConfig, parseConfig } from "./config.ts";
import { type GgufModel, openGgufFiles } from "./gguf/load.ts";
import { splitExperts } from "./fused_experts.ts";
import { type ByteTensorInfo, readCheckpoint } from "./safetensors.ts";
import { type ModelFiles, requireText } from "./source.ts";
import { mapWeights, type ModelWeights, type WeightInfo } from "./weights.ts";

export interface Checkpoint {
  format: "safetensors" | "gguf";
  location: string;
  config: ModelConfig;
  weights: ModelWeights<WeightInfo>;
  /** The parsed GGUF files (metadata, tokenizer) when the format is GGUF. */
  gguf?: GgufModel;
}

/** Read and check a checkpoint's config and tensor headers. */
export async function openCheckpoint(files: ModelFiles): Promise<Checkpoint> {
  if (files.gguf !== undefined) {
    const gguf = await openGgufFiles(files);
    return {
      format: "gguf",
      location: gguf.location,
      config: gguf.config,
      weights: mapWeights<WeightInfo>(gguf.config, gguf.tensors),
      gguf,
    };
  }
  const config = parseConfig(await requireText(files, "config.json"));
  const bytes = new Map<string, ByteTensorInfo>();
  const tensors = await readCheckpoint((name) => files.open(name), files, bytes);
  return {
    format: "safetensors",
    location: files.location,
    config,
    weights: mapWeights<WeightInfo>(config, splitExperts(config, tensors, bytes), true),
  };
}
