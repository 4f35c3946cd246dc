/**
 * HF `config.json` read into a typed config, for every family `arch/` describes (the family's
 * `hf.config` rules decide the keys families read differently). Anything Kiln cannot run is
 * refused with `InvalidArgument` naming the key.
 */
import { describe } from "../contract/describe.ts";
import { EngineError } from "../contract/errors.ts";
import { isTokenId, jsonValue } from "../contract/fields.ts";
import type { WeightDtype } from "../gpu/dtype.ts";
import {
  archByHfArchitecture,
  archByModelType,
  type ArchDescription,
  hasExperts,
  MAX_EXPERTS,
  type MoeConfig,
} from "./arch/mod.ts";
import { type AttentionKnobs, hfAttentionKnobs } from "./attention_knobs.ts";
import { type Json, positiveInt, positiveNumber, refuse } from "./config_fields.ts";
import type { RopeScaling } from "./rope.ts";
import { hfRopeSettings } from "./rope_config.ts";
import { hfLayerKinds, type LayerKindFields } from "./layer_kinds.ts";
import { checkLongropeFactors, partialRotaryDim, ropeSectionsOf } from "./hf_rotary.ts";

/** A family's name: the `name` of its `ArchDescription` (`arch/mod.ts` lists them). */
export type Architecture = string;

/** The hyperparameters of a checkpoint, from its HF `config.json` (or GGUF metadata). */
export interface ModelConfig extends AttentionKnobs, LayerKindFields {
  /** The model family (`archOf(config)` gives its description). */
  arch: Architecture;
  /** Rows of the embedding and the LM head. */
  vocabSize: number;
  /** Width of the residual stream. */
  hiddenSize: number;
  /** Width of the MLP's gate and up projections. */
  intermediateSize: number;
  /** Transformer layers. */
  numLayers: number;
  /** Query heads. */
  numHeads: number;
  /** Key/value heads (fewer than `numHeads` with grouped-query attention). */
  numKvHeads: number;
  /** Width of one attention head. */
  headDim: number;
  /** Epsilon added to the mean square in RMSNorm. */
  rmsNormEps: number;
  /** RoPE base frequency. */
  ropeTheta: number;
  /** RoPE frequency scaling (none, linear, Llama 3, ...). */
  ropeScaling: RopeScaling;
  /** Longest sequence (prompt plus output) the model supports, in tokens. */
  maxPositionEmbeddings: number;
  /** The LM head reuses the embedding matrix. */
  tieWordEmbeddings: boolean;
  /** q/k/v projections carry biases (always in some families; others with `attention_bias`). */
  attentionBias: boolean;
  /** The config's BOS token id, if any. */
  bosTokenId?: number;
  /** The config's EOS token ids (`eos_token_id`, one or a list), possibly empty. */
  eosTokenIds: number[];
  /** The dtype the config declares (`torch_dtype` / `dtype`), if any. */
  dtype?: WeightDtype;
  // Families with a mixture-of-experts MLP (a `moe_mlp` step).
  /** The experts' sizes and routing. */
  moe?: MoeConfig;

  // Per-layer RoPE (`layerRotaryDim` in rope.ts reads these).
  /** Leading elements of each q/k head that RoPE rotates (partial rotary); absent: `headDim`. */
  rotaryDim?: number;
  /**
   * Multi-section RoPE's sections (pairs of dims per position kind: time, height, width); text
   * positions are one position for every kind, so the rotation is the plain one. Kept to write
   * llama.cpp's `rope.dimension_sections` back.
   */
  ropeSections?: number[];
  /** Indices of the layers without RoPE (their attention sees no positions); absent: none. */
  noRopeLayers?: number[];

  // Scalar multipliers (`ArchDescription` `multipliers`); absent: no scaling.
  /** The embedding output times this. */
  embeddingScale?: number;
  /** Each residual branch (attention, MLP) times this before it is added. */
  residualScale?: number;
  /** The logits divided by this. */
  logitScale?: number;
}

/** The multipliers' `ModelConfig` fields, with their HF keys and their GGUF keys (after `<arch>.`). */
export const MULTIPLIER_KEYS = [
  ["embeddingScale", "embedding_multiplier", "embedding_scale"],
  ["residualScale", "residual_multiplier", "residual_scale"],
  ["attnScale", "attention_multiplier", "attention.scale"],
  ["logitScale", "logits_scaling", "logit_scale"],
] as const;

const int = (c: Json, key: string, fallback?: number) => positiveInt(c, key, key, fallback);
const num = (c: Json, key: string, fallback?: number) => positiveNumber(c, key, key, fallback);

/** `table[key]` only for the table's own keys (`"constructor"` is not an architecture). */
function lookup<T>(table: Record<string, T>, key: unknown): T | undefined {
  return typeof key === "string" && Object.hasOwn(table, key) ? table[key] : undefined;
}

function architecture(c: Json): ArchDescription {
  const archs = c.architectures;
  if (Array.isArray(archs) && archs.length > 0) {
    const arch = archByHfArchitecture(archs[0]);
    if (arch === undefined) {
      throw refuse("architectures", `unsupported architecture ${describe(archs[0])}`);
    }
    return arch;
  }
  const arch = archByModelType(c.model_type);
  if (arch === undefined) {
    throw refuse("model_type", `unsupported model type ${describe(c.model_type)}`);
  }
  return arch;
}

/** The layers without RoPE (see `HfConfigRules.noRope`). */
function noRopeLayers(c: Json, numLayers: number, defaultInterval: number): number[] {
  const flags = c.no_rope_layers;
  if (flags === undefined || flags === null) {
    const every = int(c, "no_rope_layer_interval", defaultInterval);
    return Array.from({ length: numLayers }, (_, l) => l).filter((l) => (l + 1) % every === 0);
  }
  if (
    !Array.isArray(flags) || flags.length !== numLayers || flags.some((f) => f !== 0 && f !== 1)
  ) {
    throw refuse(
      "no_rope_layers",
      `expected ${numLayers} flags (1: RoPE, 0: none), got ${describe(flags)}`,
    );
  }
  return flags.flatMap((f, l) => f === 0 ? [l] : []);
}

function dtypeOf(c: Json): WeightDtype | undefined {
  const v = c.torch_dtype ?? c.dtype;
  if (v === undefined || v === null) return undefined;
  const map: Record<string, WeightDtype> = { float32: "f32", float16: "f16", bfloat16: "bf16" };
  const d = lookup(map, v);
  if (d === undefined) {
    throw refuse(
      c.torch_dtype !== undefined && c.torch_dtype !== null ? "torch_dtype" : "dtype",
      `unsupported dtype ${describe(v)}`,
    );
  }
  return d;
}

function eosIds(c: Json, vocabSize: number): number[] {
  const v = c.eos_token_id;
  if (v === undefined || v === null) return [];
  const ids: unknown[] = Array.isArray(v) ? v : [v];
  ids.forEach((x) => tokenId(x, "eos_token_id", vocabSize));
  return ids as number[];
}

/** A token id below the vocabulary size. */
function tokenId(v: unknown, key: string, vocabSize: number): number {
  if (!isTokenId(v) || v >= vocabSize) {
    throw refuse(key, `expected a token id below vocab_size ${vocabSize}, got ${describe(v)}`);
  }
  return v;
}

/**
 * The mixture-of-experts keys: `num_experts`, `num_experts_per_tok` (at most the experts),
 * `moe_intermediate_size`, `norm_topk_prob` (or the family's own names, `HfConfigRules.experts`),
 * and `swiglu_limit` (default 7) for clamped-SwiGLU experts. Every layer must be sparse
 * (`decoder_sparse_step` 1, no `mlp_only_layers`).
 */
function moeConfig(c: Json, arch: ArchDescription): MoeConfig {
  const keys = arch.hf.config.experts;
  const countKey = keys?.count ?? "num_experts";
  const experts = int(c, countKey);
  if (experts > MAX_EXPERTS) {
    throw refuse(countKey, `${experts} is more than the ${MAX_EXPERTS} experts supported`);
  }
  const topK = int(c, "num_experts_per_tok");
  if (topK > experts) {
    throw refuse("num_experts_per_tok", `${topK} is more than the ${experts} experts`);
  }
  const step = c.decoder_sparse_step ?? 1;
  if (step !== 1) throw refuse("decoder_sparse_step", `only 1 is supported, got ${describe(step)}`);
  const dense = c.mlp_only_layers ?? [];
  if (!Array.isArray(dense) || dense.length > 0) {
    throw refuse("mlp_only_layers", `dense layers among sparse ones are not supported`);
  }
  const moe: MoeConfig = {
    experts,
    topK,
    expertIntermediateSize: int(c, keys?.width ?? "moe_intermediate_size"),
    normTopK: keys?.normTopK === true || c.norm_topk_prob === true,
  };
  if (arch.layer.some((s) => s.op === "moe_mlp" && s.act === "swiglu_oai")) {
    moe.swigluLimit = num(c, "swiglu_limit", 7);
  }
  return moe;
}

/** A `quantization_config` the family's checkpoints may carry (MXFP4 experts), else refused. */
function checkQuantization(c: Json, arch: ArchDescription): void {
  const q = c.quantization_config;
  if (q === undefined || q === null) return;
  const method = typeof q === "object" ? (q as Json).quant_method : undefined;
  if (method !== "mxfp4" || !arch.hf.config.mxfp4) {
    throw refuse(
      "quantization_config",
      `quantized checkpoints are not supported${
        method === undefined ? "" : ` (quant_method ${describe(method)})`
      }`,
    );
  }
}

/** The family of `cfg`, refused when it needs an activation, MLP biases or quantization Kiln lacks. */
function supportedArch(cfg: Json): ArchDescription {
  const arch = architecture(cfg);
  const act = cfg.hidden_activation ?? cfg.hidden_act ?? "silu";
  if (act !== (arch.hf.config.act ?? "silu")) {
    const key = cfg.hidden_activation != null ? "hidden_activation" : "hidden_act";
    throw refuse(key, `unsupported activation ${describe(act)}`);
  }
  if (cfg.mlp_bias === true) throw refuse("mlp_bias", "MLP biases are not supported");
  checkQuantization(cfg, arch);
  return arch;
}

/** The attention geometry: residual width, query and key/value heads, and the head size. */
function headGeometry(
  cfg: Json,
): Pick<ModelConfig, "hiddenSize" | "numHeads" | "numKvHeads" | "headDim"> {
  const hiddenSize = int(cfg, "hidden_size");
  const numHeads = int(cfg, "num_attention_heads");
  const numKvHeads = int(cfg, "num_key_value_heads", numHeads);
  if (numHeads % numKvHeads !== 0) {
    throw refuse("num_key_value_heads", `${numKvHeads} does not divide ${numHeads} heads`);
  }
  const headDim = cfg.head_dim === undefined || cfg.head_dim === null
    ? hiddenSize / numHeads
    : int(cfg, "head_dim");
  if (!Number.isInteger(headDim) || headDim % 2 !== 0 || headDim > 256) {
    throw refuse("head_dim", `${headDim} is not supported (an even size up to 256)`);
  }
  return { hiddenSize, numHeads, numKvHeads, headDim };
}

/** The optional fields of `config`: BOS, dtype, experts, partial rotary, multipliers, no-RoPE. */
function addOptionalFields(config: ModelConfig, cfg: Json, arch: ArchDescription): void {
  const rules = arch.hf.config;
  if (cfg.bos_token_id !== undefined && cfg.bos_token_id !== null) {
    config.bosTokenId = tokenId(cfg.bos_token_id, "bos_token_id", config.vocabSize);
  }
  const dtype = dtypeOf(cfg);
  if (dtype) config.dtype = dtype;
  if (hasExperts(arch.layer)) config.moe = moeConfig(cfg, arch);
  const rotaryDim = partialRotaryDim(cfg, config.headDim);
  if (rotaryDim !== undefined) config.rotaryDim = rotaryDim;
  const sections = ropeSectionsOf(cfg, config.rotaryDim ?? config.headDim);
  if (sections) config.ropeSections = sections;
  checkLongropeFactors(config.ropeScaling, config.rotaryDim ?? config.headDim);
  if (rules.multipliers) {
    for (const [field, key] of MULTIPLIER_KEYS) {
      if (cfg[key] !== undefined && cfg[key] !== null) config[field] = num(cfg, key);
    }
  }
  if (rules.noRope) {
    const skip = noRopeLayers(cfg, config.numLayers, rules.noRope.defaultInterval);
    if (skip.length > 0) config.noRopeLayers = skip;
  }
  if (rules.positionEmbeddingType) {
    const type = cfg.position_embedding_type ?? "rope";
    if (type !== "rope" && type !== "nope") {
      throw refuse("position_embedding_type", `expected "rope" or "nope", got ${describe(type)}`);
    }
    if (type === "nope") config.noRopeLayers = [...Array(config.numLayers).keys()];
  }
  for (const [key, value] of Object.entries(rules.fixed ?? {})) {
    if (cfg[key] != null && cfg[key] !== value) {
      throw refuse(key, `the family's layers assume ${describe(value)}, got ${describe(cfg[key])}`);
    }
  }
  const experts = rules.noExperts;
  if (experts !== undefined && cfg[experts] != null && cfg[experts] !== 0) {
    throw refuse(experts, `the family's mixture-of-experts variants are not supported`);
  }
}

/** The tied head: the family's own key when present, else `tie_word_embeddings` (and its default). */
function tied(cfg: Json, rules: ArchDescription["hf"]["config"]): boolean {
  const own = rules.keys?.tieWordEmbeddings;
  const v = own !== undefined && cfg[own] != null ? cfg[own] : cfg.tie_word_embeddings;
  if (v != null && typeof v !== "boolean") {
    throw refuse(own ?? "tie_word_embeddings", `expected true or false, got ${describe(v)}`);
  }
  return v === true || (v == null && rules.tiedByDefault === true);
}

/** The MLP width of a `block_ff_dim` config (`HfConfigRules.blockFfDim`). */
function blockFfDim(cfg: Json): number {
  const key = cfg.block_ff_dim != null ? "block_ff_dim" : "intermediate_size";
  let dim = int(cfg, key);
  if (cfg.block_auto_adjust_ff_dim !== true) return dim;
  dim = Math.floor((2 * dim) / 3);
  if (cfg.block_ffn_dim_multiplier != null) {
    dim = Math.floor(num(cfg, "block_ffn_dim_multiplier") * dim);
  }
  const multiple = int(cfg, "block_multiple_of", 1);
  return multiple * Math.ceil(dim / multiple);
}

/** Parse a `config.json` (text or parsed). */
export function parseConfig(json: string | unknown): ModelConfig {
  const c = jsonValue(json, "config.json");
  if (typeof c !== "object" || c === null || Array.isArray(c)) {
    throw EngineError.invalidArgument("config.json: expected an object");
  }
  const cfg = c as Json;
  const arch = supportedArch(cfg);
  const { hiddenSize, numHeads, numKvHeads, headDim } = headGeometry(cfg);
  const maxPositionEmbeddings = int(cfg, "max_position_embeddings", 2048);
  const rules = arch.hf.config;
  const { theta, scaling } = hfRopeSettings(cfg, maxPositionEmbeddings);
  const attentionBias = rules.attentionBias === "always" || cfg.attention_bias === true;
  const vocabSize = int(cfg, "vocab_size");
  const config: ModelConfig = {
    arch: arch.name,
    vocabSize,
    hiddenSize,
    intermediateSize: rules.blockFfDim
      ? blockFfDim(cfg)
      : int(cfg, rules.keys?.intermediateSize ?? "intermediate_size"),
    numLayers: int(cfg, "num_hidden_layers"),
    numHeads,
    numKvHeads,
    headDim,
    rmsNormEps: num(cfg, rules.keys?.rmsNormEps ?? "rms_norm_eps", 1e-6),
    ropeTheta: theta,
    ropeScaling: scaling,
    maxPositionEmbeddings,
    tieWordEmbeddings: tied(cfg, rules),
    attentionBias,
    eosTokenIds: eosIds(cfg, vocabSize),
    ...hfAttentionKnobs(cfg, arch, {
      hiddenSize,
      headDim,
      numLayers: int(cfg, "num_hidden_layers"),
      maxPositions: maxPositionEmbeddings,
    }),
  };
  addOptionalFields(config, cfg, arch);
  return { ...config, ...hfLayerKinds(cfg, arch, config.numLayers) };
}
