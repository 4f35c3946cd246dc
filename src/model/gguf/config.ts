/**
 * A `ModelConfig` from GGUF metadata: the same object `parseConfig` gives for the equivalent HF
 * `config.json`. `general.architecture` picks the family (`arch/mod.ts`), whose keys are
 * `<architecture>.*`; any other architecture (and experts in a family without a mixture-of-experts
 * MLP) is refused naming the key.
 */
import type { WeightDtype } from "../../gpu/dtype.ts";
import {
  archByGguf,
  type ArchDescription,
  ggufArchitectures,
  hasExperts,
  layerEntry,
  MAX_EXPERTS,
  type MoeConfig,
} from "../arch/mod.ts";
import { ggufAttentionKnobs } from "../attention_knobs.ts";
import { type ModelConfig, MULTIPLIER_KEYS } from "../config.ts";
import { ggufRopeScaling } from "../rope_config.ts";
import { ggufLayerKinds, type LayerKindFields } from "../layer_kinds.ts";
import type { GgufMetadata } from "../../formats/gguf/metadata.ts";

/** `general.file_type` values of files whose weights are all (or mostly) one float dtype. */
const FILE_DTYPES: Record<number, WeightDtype> = { 0: "f32", 1: "f16", 32: "bf16" };

/** Token ids named by `tokenizer.ggml.*_token_id` keys that end a sequence, EOS first. */
function eosIds(m: GgufMetadata): number[] {
  const keys = ["eos", "eot", "eom"].map((k) => `tokenizer.ggml.${k}_token_id`);
  return [...new Set(keys.filter((k) => m.has(k)).map((k) => m.uint(k)))];
}

/**
 * The attention geometry: residual width, query and key/value heads, and the head size; and a
 * hybrid family's layer kinds (`layer_kinds.ts`).
 */
function headGeometry(
  m: GgufMetadata,
  p: string,
  arch: ArchDescription,
): Pick<ModelConfig, "hiddenSize" | "numHeads" | "numKvHeads" | "headDim"> & LayerKindFields {
  const hiddenSize = m.count(`${p}embedding_length`);
  const numHeads = m.count(`${p}attention.head_count`);
  const { numKvHeads, ...kinds } = ggufLayerKinds(
    m,
    p,
    arch,
    m.count(`${p}block_count`),
    numHeads,
  );
  if (numHeads % numKvHeads !== 0) {
    throw m.refuse(
      `${p}attention.head_count_kv`,
      `${numKvHeads} does not divide ${numHeads} heads`,
    );
  }
  const headDim = m.has(`${p}attention.key_length`)
    ? m.count(`${p}attention.key_length`)
    : hiddenSize / numHeads;
  if (!Number.isInteger(headDim) || headDim % 2 !== 0 || headDim > 256) {
    throw m.refuse(
      `${p}attention.key_length`,
      `head size ${headDim} is not supported (an even size up to 256)`,
    );
  }
  const valueKey = `${p}attention.value_length`;
  if (m.has(valueKey) && m.count(valueKey) !== headDim) {
    throw m.refuse(valueKey, `${m.count(valueKey)} differs from the head size ${headDim}`);
  }
  return { hiddenSize, numHeads, numKvHeads, headDim, ...kinds };
}

/** Partial rotary: RoPE on the first `rope.dimension_count` elements of each head (NEOX only). */
function rotaryDimOf(m: GgufMetadata, p: string, arch: ArchDescription, headDim: number): number {
  const rotKey = `${p}rope.dimension_count`;
  const rotaryDim = m.has(rotKey) ? m.count(rotKey) : headDim;
  if (
    rotaryDim > headDim || rotaryDim % 2 !== 0 || (rotaryDim < headDim && arch.gguf.interleavedQk)
  ) {
    throw m.refuse(
      rotKey,
      `${rotaryDim} rotated elements of heads of ${headDim} are not supported${
        arch.gguf.interleavedQk ? " (partial rotary with interleaved q/k rows)" : ""
      }`,
    );
  }
  return rotaryDim;
}

/** `<arch>.vocab_size`, else the count of `tokenizer.ggml.tokens` (else refused as missing). */
function vocabSizeOf(m: GgufMetadata, p: string): number {
  return m.has(`${p}vocab_size`)
    ? m.count(`${p}vocab_size`)
    : m.has("tokenizer.ggml.tokens")
    ? m.strings("tokenizer.ggml.tokens").length
    : m.count(`${p}vocab_size`);
}

/** The experts' sizes and routing (`<arch>.expert_*`). */
function expertConfig(m: GgufMetadata, p: string, arch: ArchDescription): MoeConfig {
  const experts = m.count(`${p}expert_count`);
  if (experts > MAX_EXPERTS) {
    throw m.refuse(`${p}expert_count`, `${experts} is more than the ${MAX_EXPERTS} supported`);
  }
  const topK = m.count(`${p}expert_used_count`);
  if (topK > experts) {
    throw m.refuse(`${p}expert_used_count`, `${topK} is more than the ${experts} experts`);
  }
  const norm = `${p}expert_weights_norm`;
  const moe: MoeConfig = {
    experts,
    topK,
    expertIntermediateSize: m.count(`${p}expert_feed_forward_length`),
    normTopK: m.has(norm) ? m.bool(norm) : arch.gguf.expertWeightsNorm === true,
  };
  if (arch.gguf.swigluLimit !== undefined) moe.swigluLimit = arch.gguf.swigluLimit;
  return moe;
}

/** The optional fields of `config`: BOS, experts, partial rotary, multipliers, no-RoPE, dtype. */
function addOptionalFields(
  config: ModelConfig,
  m: GgufMetadata,
  p: string,
  arch: ArchDescription,
  rotaryDim: number,
): void {
  if (m.has("tokenizer.ggml.bos_token_id")) {
    config.bosTokenId = m.uint("tokenizer.ggml.bos_token_id");
  }
  if (hasExperts(arch.layer)) config.moe = expertConfig(m, p, arch);
  if (rotaryDim < config.headDim) config.rotaryDim = rotaryDim;
  const sections = `${p}rope.dimension_sections`;
  if (m.has(sections)) {
    const v = m.uints(sections);
    while (v.length > 0 && v[v.length - 1] === 0) v.pop();
    if (v.reduce((a, b) => a + b, 0) > rotaryDim / 2) {
      throw m.refuse(sections, `more than the ${rotaryDim / 2} rotated pairs`);
    }
    config.ropeSections = v;
  }
  if (arch.gguf.multipliers) {
    for (const [field, , key] of MULTIPLIER_KEYS) {
      if (m.has(`${p}${key}`)) config[field] = m.positive(`${p}${key}`);
    }
  }
  const finetuned = `${p}rope.scaling.finetuned`;
  if (arch.gguf.ropeFinetunedSwitch && m.has(finetuned) && !m.bool(finetuned)) {
    config.noRopeLayers = [...Array(config.numLayers).keys()];
  }
  const every = arch.gguf.noRopeInterval;
  if (every !== undefined && config.numLayers >= every) {
    const layers = Array.from({ length: config.numLayers }, (_, l) => l);
    config.noRopeLayers = layers.filter((l) => (l + 1) % every === 0);
  }
  if (m.has("general.file_type")) {
    const dtype = FILE_DTYPES[m.uint("general.file_type")];
    if (dtype) config.dtype = dtype;
  }
}

/**
 * `tensorNames`: the GGUF names of the model's tensors (tied embeddings when there is no
 * `output.weight`; attention biases, in families where they are optional, when there is
 * `blk.0.attn_q.bias`).
 */
export function ggufConfig(m: GgufMetadata, tensorNames: ReadonlySet<string>): ModelConfig {
  const archName = m.string("general.architecture");
  const arch = archByGguf(archName);
  if (arch === undefined) {
    throw m.refuse(
      "general.architecture",
      `unsupported architecture ${JSON.stringify(archName)} (${ggufArchitectures().join(", ")})`,
    );
  }
  const p = `${archName}.`;
  const qBias = layerEntry(arch, "qBias")?.gguf;
  if (!hasExperts(arch.layer) && m.uint(`${p}expert_count`, 0) > 0) {
    throw m.refuse(`${p}expert_count`, "experts in a family without a mixture-of-experts MLP");
  }
  const { hiddenSize, numHeads, numKvHeads, headDim, ...kinds } = headGeometry(m, p, arch);
  const rotaryDim = rotaryDimOf(m, p, arch, headDim);
  const maxPositionEmbeddings = m.count(`${p}context_length`, 2048);
  const vocabSize = vocabSizeOf(m, p);
  const config: ModelConfig = {
    arch: arch.name,
    vocabSize,
    hiddenSize,
    intermediateSize: m.count(`${p}feed_forward_length`),
    numLayers: m.count(`${p}block_count`),
    numHeads,
    numKvHeads,
    headDim,
    rmsNormEps: m.positive(`${p}attention.layer_norm_rms_epsilon`),
    ropeTheta: m.positive(`${p}rope.freq_base`, 10000),
    ropeScaling: ggufRopeScaling(m, p, maxPositionEmbeddings),
    maxPositionEmbeddings,
    tieWordEmbeddings: !tensorNames.has("output.weight"),
    attentionBias: arch.gguf.attentionBias === "always" || tensorNames.has(`blk.0.${qBias}`),
    eosTokenIds: eosIds(m),
    ...ggufAttentionKnobs(m, p, arch, {
      hiddenSize,
      numHeads,
      numLayers: m.count(`${p}block_count`),
      maxPositions: maxPositionEmbeddings,
    }),
  };
  addOptionalFields(config, m, p, arch, rotaryDim);
  return { ...config, ...kinds };
}
