/**
 * Model families as data (`ArchDescription`, one file per family) and the registry of every
 * family Kiln runs, looked up by the names checkpoints use. The registry is built from the family
 * files' exports: adding a family is adding its file to `FAMILIES`.
 * @module
 */
export * from "./arch.ts";
export * from "./decoder.ts";
export * from "./names.ts";

import { EngineError } from "../../contract/errors.ts";
import type { ArchDescription } from "./arch.ts";
import { GEMMA2 } from "./gemma2.ts";
import { GEMMA3 } from "./gemma3.ts";
import { GPT_OSS } from "./gpt_oss.ts";
import { GRANITE } from "./granite.ts";
import { GRANITE_HYBRID } from "./granite_hybrid.ts";
import { LFM2 } from "./lfm2.ts";
import { LLAMA } from "./llama.ts";
import { MISTRAL } from "./mistral.ts";
import { OLMO2 } from "./olmo2.ts";
import { PHI3 } from "./phi3.ts";
import { QWEN2 } from "./qwen2.ts";
import { QWEN3 } from "./qwen3.ts";
import { QWEN3_MOE } from "./qwen3moe.ts";
import { QWEN35 } from "./qwen35.ts";
import { SMOLLM3 } from "./smollm3.ts";

const FAMILIES: readonly ArchDescription[] = [
  LLAMA,
  MISTRAL,
  QWEN2,
  QWEN3,
  QWEN3_MOE,
  GEMMA2,
  GEMMA3,
  SMOLLM3,
  GRANITE,
  OLMO2,
  PHI3,
  GPT_OSS,
  LFM2,
  GRANITE_HYBRID,
  QWEN35,
];

/** The families by `ModelConfig.arch`. */
export const ARCHS: ReadonlyMap<string, ArchDescription> = new Map(
  FAMILIES.map((a) => [a.name, a]),
);

function index(key: (a: ArchDescription) => readonly string[]): Map<string, ArchDescription> {
  return new Map(FAMILIES.flatMap((a) => key(a).map((k) => [k, a] as const)));
}

const BY_HF_ARCH = index((a) => a.hf.architectures);
const BY_MODEL_TYPE = index((a) => a.hf.modelTypes);
const BY_GGUF = index((a) => a.gguf.architectures);

/** The family of an HF `architectures[0]` value, if Kiln runs it. */
export function archByHfArchitecture(name: unknown): ArchDescription | undefined {
  return typeof name === "string" ? BY_HF_ARCH.get(name) : undefined;
}

/** The family of an HF `model_type` value, if Kiln runs it. */
export function archByModelType(name: unknown): ArchDescription | undefined {
  return typeof name === "string" ? BY_MODEL_TYPE.get(name) : undefined;
}

/** The family of a GGUF `general.architecture` value, if Kiln runs it. */
export function archByGguf(name: string): ArchDescription | undefined {
  return BY_GGUF.get(name);
}

/** The GGUF `general.architecture` values Kiln reads. */
export function ggufArchitectures(): string[] {
  return [...BY_GGUF.keys()];
}

/** The description of a config's family (`ModelConfig.arch`). */
export function archOf(config: { arch: string }): ArchDescription {
  const a = ARCHS.get(config.arch);
  if (a === undefined) {
    throw EngineError.invalidArgument(`config.arch: no architecture named ${config.arch}`);
  }
  return a;
}
