/**
 * The GGUF metadata of a conversion (`convert.ts`): the hyper-parameters llama.cpp reads under
 * `<gguf.write>.*`, the MoE keys, the multipliers, RoPE scaling, the attention knobs (window and
 * its layer pattern, local RoPE base, scale, soft-caps) and the tokenizer. A config llama.cpp's
 * family cannot express (its fixed top-k renormalisation or SwiGLU clamp, partial rotary with
 * interleaved q/k, RoPE-free layers off its pattern, window layers no pattern gives) is refused
 * naming the key.
 *
 * @module
 */
import { EngineError } from "../contract/errors.ts";
import { archOf } from "../model/arch/mod.ts";
import { type ModelConfig, MULTIPLIER_KEYS } from "../model/config.ts";
import { ggufRopeMetadata } from "../model/rope_config.ts";
import type { ConvertOptions, HfCheckpoint } from "./hf_checkpoint.ts";
import { MIX_FILE_TYPE } from "./quant_mix.ts";
import { tokenizerMetadata } from "./tokenizer_meta.ts";
import { type GgufValue, GgufValueType as T } from "./writer.ts";

/** The metadata llama.cpp reads for the model's family, tokenizer included. */
export function ggufMetadata(
  ck: HfCheckpoint,
  opts: ConvertOptions = {},
  warnings: string[] = [],
): Record<string, GgufValue> {
  const c = ck.config;
  const arch = archOf(c).gguf.write;
  const u32 = (value: number): GgufValue => ({ type: T.UINT32, value });
  const f32 = (value: number): GgufValue => ({ type: T.FLOAT32, value });
  const fileType = opts.mix !== undefined
    ? MIX_FILE_TYPE[opts.mix]
    : c.dtype === "f32"
    ? 0
    : c.dtype === "bf16"
    ? 32
    : 1;
  const meta: Record<string, GgufValue> = {
    "general.architecture": { type: T.STRING, value: arch },
    "general.name": { type: T.STRING, value: opts.name ?? "model" },
    "general.file_type": u32(fileType),
    ...(opts.mix !== undefined ? { "general.quantization_version": u32(2) } : {}),
    [`${arch}.vocab_size`]: u32(c.vocabSize),
    [`${arch}.context_length`]: u32(c.maxPositionEmbeddings),
    [`${arch}.embedding_length`]: u32(c.hiddenSize),
    [`${arch}.block_count`]: u32(c.numLayers),
    [`${arch}.feed_forward_length`]: u32(c.intermediateSize),
    [`${arch}.attention.head_count`]: u32(c.numHeads),
    [`${arch}.attention.head_count_kv`]: u32(c.numKvHeads),
    [`${arch}.attention.key_length`]: u32(c.headDim),
    [`${arch}.attention.value_length`]: u32(c.headDim),
    [`${arch}.attention.layer_norm_rms_epsilon`]: f32(c.rmsNormEps),
    [`${arch}.rope.dimension_count`]: u32(c.rotaryDim ?? c.headDim),
    [`${arch}.rope.freq_base`]: f32(c.ropeTheta),
  };
  if (c.moe) {
    meta[`${arch}.expert_count`] = u32(c.moe.experts);
    meta[`${arch}.expert_used_count`] = u32(c.moe.topK);
    meta[`${arch}.expert_feed_forward_length`] = u32(c.moe.expertIntermediateSize);
    // llama.cpp fixes the renormalisation per family; a file cannot ask for the other.
    const norm = archOf(c).gguf.expertWeightsNorm === true;
    if (c.moe.normTopK !== norm) {
      throw EngineError.invalidArgument(
        `config.norm_topk_prob: llama.cpp's ${arch} ${
          norm ? "always" : "never"
        } renormalises the top-k router weights; ${c.moe.normTopK} cannot be written`,
      );
    }
  }
  if (c.moe?.swigluLimit !== archOf(c).gguf.swigluLimit) {
    throw EngineError.invalidArgument(
      `config.swiglu_limit: llama.cpp's ${arch} clamps its experts at ${
        archOf(c).gguf.swigluLimit ?? "nothing"
      }; ${c.moe?.swigluLimit} cannot be written`,
    );
  }
  if (c.rotaryDim !== undefined && archOf(c).gguf.interleavedQk) {
    throw EngineError.invalidArgument(
      `config.partial_rotary_factor: llama.cpp's ${arch} interleaves q/k rows for full rotary only`,
    );
  }
  Object.assign(meta, noRopeMetadata(c, arch));
  for (const [field, hfKey, key] of MULTIPLIER_KEYS) {
    const v = c[field];
    // The attention scale is an attention knob too, written with them (knobMetadata).
    if (v === undefined || field === "attnScale") continue;
    if (!archOf(c).gguf.multipliers) {
      throw EngineError.invalidArgument(`config.${hfKey}: llama.cpp's ${arch} does not read it`);
    }
    meta[`${arch}.${key}`] = f32(v);
  }
  Object.assign(meta, layerKindMetadata(c, arch), ggufRopeMetadata(c.ropeScaling, arch, warnings));
  // llama3 scaling and stored factors travel as the `rope_freqs` tensor (see ggufTensors).
  Object.assign(meta, knobMetadata(c, `${arch}.`));
  return { ...meta, ...tokenizerMetadata(ck.tokenizer, c, warnings) };
}

/**
 * RoPE-free layers as the family's files say them: `rope.scaling.finetuned` false for every layer
 * (`ropeFinetunedSwitch`), else only the family's fixed pattern (`noRopeInterval`); any other set
 * is refused.
 */
function noRopeMetadata(c: ModelConfig, arch: string): Record<string, GgufValue> {
  const meta: Record<string, GgufValue> = {};
  const every = archOf(c).gguf.noRopeInterval;
  const all = Array.from({ length: c.numLayers }, (_, l) => l);
  // A family whose files switch RoPE off for every layer (`rope.scaling.finetuned` false).
  const off = archOf(c).gguf.ropeFinetunedSwitch && String(c.noRopeLayers) === String(all);
  if (off) meta[`${arch}.rope.scaling.finetuned`] = { type: T.BOOL, value: false };
  const skips = off ? all : every === undefined ? [] : all.filter((l) => (l + 1) % every === 0);
  if (String(c.noRopeLayers ?? []) !== String(skips)) {
    throw EngineError.invalidArgument(
      `config.no_rope_layers: layers ${c.noRopeLayers ?? []} without RoPE; llama.cpp's ${arch} ` +
        `skips it on ${skips.length > 0 ? `layers ${skips}` : "none"}`,
    );
  }
  return meta;
}

/**
 * A hybrid family's layer kinds as llama.cpp's converter writes them (`ArchDescription.kinds`):
 * `attention.head_count_kv` one entry per layer, 0 at a recurrent layer, and the convolution's
 * taps. Nothing for a family without kinds.
 */
function layerKindMetadata(c: ModelConfig, arch: string): Record<string, GgufValue> {
  const kinds = archOf(c).kinds;
  if (kinds === undefined || c.layerKinds === undefined) return {};
  const meta: Record<string, GgufValue> = {};
  if (kinds.ggufMarks === "flags") {
    const value = c.layerKinds.map((k) => k !== "attention");
    meta[`${arch}.attention.recurrent_layers`] = { type: T.ARRAY, itemType: T.BOOL, value };
  } else {
    const value = c.layerKinds.map((k) => k === "attention" ? c.numKvHeads : 0);
    meta[`${arch}.attention.head_count_kv`] = { type: T.ARRAY, itemType: T.INT32, value };
  }
  const u32 = (value: number): GgufValue => ({ type: T.UINT32, value });
  if (kinds.convWidth && c.convWidth !== undefined) {
    meta[`${arch}.${kinds.convWidth.gguf}`] = u32(c.convWidth);
  }
  if (c.ssm) {
    meta[`${arch}.ssm.inner_size`] = u32(c.ssm.inner);
    meta[`${arch}.ssm.state_size`] = u32(c.ssm.state);
    meta[`${arch}.ssm.group_count`] = u32(c.ssm.groups);
    meta[`${arch}.ssm.time_step_rank`] = u32(c.ssm.heads);
  }
  if (c.delta) {
    meta[`${arch}.ssm.inner_size`] = u32(c.delta.vHeads * c.delta.vDim);
    meta[`${arch}.ssm.state_size`] = u32(c.delta.kDim);
    meta[`${arch}.ssm.group_count`] = u32(c.delta.kHeads);
    meta[`${arch}.ssm.time_step_rank`] = u32(c.delta.vHeads);
  }
  if (c.ropeSections) {
    const value = [...c.ropeSections, 0, 0, 0, 0].slice(0, 4);
    meta[`${arch}.rope.dimension_sections`] = { type: T.ARRAY, itemType: T.INT32, value };
  }
  return meta;
}

/**
 * The attention knobs (`attention_knobs.ts`) as the GGUF keys `ggufAttentionKnobs` reads back:
 * the window and its layer pattern, the local RoPE base, the attention scale and the soft-caps.
 * Window layers that no pattern describes are refused.
 */
function knobMetadata(c: ModelConfig, p: string): Record<string, GgufValue> {
  const u32 = (value: number): GgufValue => ({ type: T.UINT32, value });
  const f32 = (value: number): GgufValue => ({ type: T.FLOAT32, value });
  const meta: Record<string, GgufValue> = {};
  if (c.slidingWindow !== undefined) {
    meta[`${p}attention.sliding_window`] = u32(c.slidingWindow);
    // Layer i uses the window when i % n < n - 1; n = layers + 1 is every layer.
    const layers = c.slidingLayers ?? Array(c.numLayers).fill(true);
    const pattern = Array.from({ length: c.numLayers + 1 }, (_, i) => i + 1).find((n) =>
      layers.every((w, i) => w === i % n < n - 1)
    );
    if (pattern === undefined) {
      throw EngineError.invalidArgument(
        "config.layer_types: no GGUF sliding_window_pattern gives these window layers",
      );
    }
    meta[`${p}attention.sliding_window_pattern`] = u32(pattern);
    if (c.ropeLocalTheta !== undefined) meta[`${p}rope.freq_base_swa`] = f32(c.ropeLocalTheta);
  }
  if (c.attnScale !== undefined) meta[`${p}attention.scale`] = f32(c.attnScale);
  if (c.attnSoftcap !== undefined) meta[`${p}attn_logit_softcapping`] = f32(c.attnSoftcap);
  if (c.finalSoftcap !== undefined) meta[`${p}final_logit_softcapping`] = f32(c.finalSoftcap);
  return meta;
}
