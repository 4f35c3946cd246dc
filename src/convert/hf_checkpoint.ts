/**
 * An HF checkpoint opened for conversion (`config.json`, the safetensors headers, the tokenizer
 * files) and the conversion's options: what `convert.ts` and `convert_metadata.ts` both read.
 */
import { EngineError } from "../contract/errors.ts";
import { type ModelConfig, parseConfig } from "../model/config.ts";
import { splitExperts } from "../model/fused_experts.ts";
import { type ByteTensorInfo, readCheckpoint } from "../formats/safetensors.ts";
import { type ModelFiles, readText, requireText } from "../formats/source.ts";
import { mapWeights, type ModelWeights, type WeightInfo } from "../model/weights.ts";
import type { GgufMix } from "./quant_mix.ts";
import type { HfTokenizerFiles } from "./tokenizer_meta.ts";

/** A checkpoint opened for conversion: its config, checked weights and tokenizer files. */
export interface HfCheckpoint {
  config: ModelConfig;
  /** Float tensors, and any already quantized (MXFP4 experts), which keep their type. */
  weights: ModelWeights<WeightInfo>;
  /** `tokenizer.json` and `tokenizer_config.json`, when the checkpoint has a tokenizer. */
  tokenizer?: HfTokenizerFiles;
}

function parseJson(text: string, name: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text) as unknown;
    if (v !== null && typeof v === "object" && !Array.isArray(v)) {
      return v as Record<string, unknown>;
    }
  } catch (e) {
    throw EngineError.invalidArgument(`${name} is not JSON: ${(e as Error).message}`, e);
  }
  throw EngineError.invalidArgument(`${name} is not a JSON object`);
}

/** Read `config.json`, the safetensors headers and the tokenizer files of a checkpoint. */
export async function readHfCheckpoint(files: ModelFiles): Promise<HfCheckpoint> {
  const config = parseConfig(await requireText(files, "config.json"));
  const bytes = new Map<string, ByteTensorInfo>();
  const tensors = await readCheckpoint((name) => files.open(name), files, bytes);
  const weights = mapWeights(config, splitExperts(config, tensors, bytes), true);
  const json = await readText(files, "tokenizer.json");
  if (json === undefined) return { config, weights };
  const tc = await readText(files, "tokenizer_config.json");
  return {
    config,
    weights,
    tokenizer: {
      json: parseJson(json, "tokenizer.json"),
      config: tc === undefined ? {} : parseJson(tc, "tokenizer_config.json"),
    },
  };
}

/** How to convert: the quantization mix and the model's name. */
export interface ConvertOptions {
  /** The quantization mix; without one, matrices keep their dtype. */
  mix?: GgufMix;
  /** `general.name` (default `model`). */
  name?: string;
}
