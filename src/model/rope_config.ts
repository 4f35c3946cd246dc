/**
 * RoPE base and scaling read from an HF `config.json` (`hfRopeSettings`) or from GGUF metadata
 * (`ggufRopeScaling`) into the same `RopeScaling` (`rope.ts`). A value Kiln cannot honour is
 * refused with `InvalidArgument` naming its key.
 *
 * YaRN is read as each format means it: from HF, `factor` (else max / original context),
 * `original_max_position_embeddings` (else `max_position_embeddings`), `beta_fast` / `beta_slow`
 * (32 / 1), `truncate` (true) and the attention factor `attention_factor` (else from `mscale` and
 * `mscale_all_dim`, else 0.1 ln(factor) + 1). From GGUF, `rope.scaling.factor`,
 * `.original_context_length` (else the context), `.yarn_beta_fast` / `.yarn_beta_slow`,
 * `.yarn_attn_factor` (HF's `attention_factor`, as llama.cpp's converter writes it) or
 * `.yarn_log_multiplier` (HF's `mscale_all_dim`), times `.attn_factor`; always truncated.
 * llama.cpp itself reads the beta keys only for a few families (defaults 32 / 1 elsewhere) and
 * recomputes the attention factor from the factor (ignoring `yarn_attn_factor`); files that
 * carry the defaults, like gpt-oss's, read the same either way.
 */
import { describe } from "../contract/describe.ts";
import type { GgufMetadata } from "../formats/gguf/metadata.ts";
import { type GgufValue, GgufValueType as T } from "../formats/gguf/value_types.ts";
import { type Json, positiveInt, positiveNumber, refuse } from "./config_fields.ts";
import { longRopeAttentionFactor, type RopeScaling, yarnAttentionFactor } from "./rope.ts";

/** A list of positive RoPE frequency divisors (`rope_scaling.short_factor` ...). */
function factorList(src: Json, parent: string, key: string): number[] {
  const v = src[key];
  if (!Array.isArray(v) || v.length === 0 || v.some((x) => !(typeof x === "number" && x > 0))) {
    throw refuse(`${parent}.${key}`, `expected a list of positive numbers, got ${describe(v)}`);
  }
  return v;
}

/** HF's YaRN keys (see the module comment). */
function hfYarn(s: Json, parent: string, maxPositions: number): RopeScaling {
  const key = (k: string) => `${parent}.${k}`;
  const has = (k: string) => s[k] !== undefined && s[k] !== null;
  const original = has("original_max_position_embeddings")
    ? positiveInt(s, "original_max_position_embeddings", key("original_max_position_embeddings"))
    : maxPositions;
  const factor = has("factor")
    ? positiveNumber(s, "factor", key("factor"))
    : maxPositions / original;
  const truncate = s.truncate ?? true;
  if (typeof truncate !== "boolean") {
    throw refuse(key("truncate"), `expected a boolean, got ${describe(truncate)}`);
  }
  const opt = (k: string) => has(k) ? positiveNumber(s, k, key(k)) : 0;
  return {
    type: "yarn",
    factor,
    originalMaxPositionEmbeddings: original,
    betaFast: positiveNumber(s, "beta_fast", key("beta_fast"), 32),
    betaSlow: positiveNumber(s, "beta_slow", key("beta_slow"), 1),
    truncate,
    attentionFactor: has("attention_factor")
      ? positiveNumber(s, "attention_factor", key("attention_factor"))
      : yarnAttentionFactor(factor, opt("mscale"), opt("mscale_all_dim")),
  };
}

/** RoPE base and scaling of an HF config (`rope_parameters`, or `rope_theta` + `rope_scaling`). */
export function hfRopeSettings(
  c: Json,
  maxPositions: number,
): { theta: number; scaling: RopeScaling } {
  // transformers 5 writes rope_parameters; older checkpoints rope_theta + rope_scaling.
  const params = c.rope_parameters ?? undefined;
  const key = params !== undefined ? "rope_parameters" : "rope_scaling";
  const src = params ?? c.rope_scaling ?? {};
  if (typeof src !== "object" || src === null || Array.isArray(src)) {
    throw refuse(key, `expected an object, got ${describe(src)}`);
  }
  const s = src as Json;
  const theta = positiveNumber(params !== undefined ? s : c, "rope_theta", "rope_theta", 10000);
  const type: unknown = s.rope_type ?? s.type ?? "default";
  const f = (k: string) => positiveNumber(s, k, k);
  switch (type) {
    case "default":
      return { theta, scaling: { type: "default" } };
    case "linear":
      return { theta, scaling: { type: "linear", factor: f("factor") } };
    case "dynamic":
      return { theta, scaling: { type: "dynamic", factor: f("factor") } };
    case "yarn":
      return { theta, scaling: hfYarn(s, key, maxPositions) };
    case "llama3":
      return {
        theta,
        scaling: {
          type: "llama3",
          factor: f("factor"),
          lowFreqFactor: f("low_freq_factor"),
          highFreqFactor: f("high_freq_factor"),
          originalMaxPositionEmbeddings: f("original_max_position_embeddings"),
        },
      };
    case "longrope":
    case "su": {
      const original = s.original_max_position_embeddings !== undefined
        ? positiveInt(s, "original_max_position_embeddings", "original_max_position_embeddings")
        : positiveInt(c, "original_max_position_embeddings", "original_max_position_embeddings");
      return {
        theta,
        scaling: {
          type: "longrope",
          shortFactor: factorList(s, key, "short_factor"),
          longFactor: factorList(s, key, "long_factor"),
          originalMaxPositionEmbeddings: original,
          maxPositionEmbeddings: maxPositions,
          attentionFactor: s.attention_factor !== undefined && s.attention_factor !== null
            ? f("attention_factor")
            : longRopeAttentionFactor(maxPositions, original),
        },
      };
    }
    default:
      throw refuse(`${key}.rope_type`, `unsupported RoPE type ${describe(type)}`);
  }
}

/**
 * The RoPE scaling of GGUF metadata under `p` (`<arch>.`): `rope.scaling.type` none, linear
 * (or the old `rope.scale_linear`) or yarn (see the module comment). Scalings stored as tensors
 * (Llama 3's `rope_freqs`, LongRoPE's factors) are read by the loader.
 */
export function ggufRopeScaling(m: GgufMetadata, p: string, maxPositions: number): RopeScaling {
  const typeKey = `${p}rope.scaling.type`;
  const type = m.string(typeKey, m.has(`${p}rope.scale_linear`) ? "linear" : "none");
  const k = (name: string) => `${p}rope.scaling.${name}`;
  switch (type) {
    case "none":
      return { type: "default" };
    case "linear": {
      const factor = m.has(k("factor"))
        ? m.positive(k("factor"))
        : m.positive(`${p}rope.scale_linear`);
      return { type: "linear", factor };
    }
    case "yarn": {
      // llama.cpp: a missing factor is 1 (no scaling).
      const factor = m.positive(k("factor"), 1);
      const logMul = m.has(k("yarn_log_multiplier")) ? m.positive(k("yarn_log_multiplier")) : 0;
      const attention = m.has(k("yarn_attn_factor"))
        ? m.positive(k("yarn_attn_factor"))
        : yarnAttentionFactor(factor, 1, logMul);
      return {
        type: "yarn",
        factor,
        originalMaxPositionEmbeddings: m.count(k("original_context_length"), maxPositions),
        betaFast: m.positive(k("yarn_beta_fast"), 32),
        betaSlow: m.positive(k("yarn_beta_slow"), 1),
        truncate: true,
        attentionFactor: attention * m.positive(k("attn_factor"), 1),
      };
    }
    default:
      throw m.refuse(typeKey, `unsupported RoPE scaling ${JSON.stringify(type)}`);
  }
}

/**
 * The `<arch>.rope.scaling.*` keys of `s` that `ggufRopeScaling` (and llama.cpp) read back:
 * linear and yarn as keys; LongRoPE's attention factor and original context (its factors, like
 * Llama 3's, travel as tensors). Dynamic NTK is refused (llama.cpp has none); YaRN without
 * truncation is written with a warning (GGUF has no key for it: llama.cpp truncates).
 */
export function ggufRopeMetadata(
  s: RopeScaling,
  arch: string,
  warnings: string[],
): Record<string, GgufValue> {
  const f32 = (value: number): GgufValue => ({ type: T.FLOAT32, value });
  const u32 = (value: number): GgufValue => ({ type: T.UINT32, value });
  const p = `${arch}.rope.scaling.`;
  switch (s.type) {
    case "linear":
      return {
        [`${p}type`]: { type: T.STRING, value: "linear" },
        [`${p}factor`]: f32(s.factor),
      };
    case "longrope":
      return {
        [`${p}attn_factor`]: f32(s.attentionFactor),
        [`${p}original_context_length`]: u32(s.originalMaxPositionEmbeddings),
      };
    case "yarn":
      if (!s.truncate) {
        warnings.push(
          "rope_scaling.truncate: false is not stored in GGUF; llama.cpp rounds YaRN's ramp ends",
        );
      }
      // llama.cpp derives the attention factor from the factor and multiplies it by
      // `attn_factor`: a given one travels as that ratio.
      return {
        [`${p}type`]: { type: T.STRING, value: "yarn" },
        [`${p}factor`]: f32(s.factor),
        [`${p}original_context_length`]: u32(s.originalMaxPositionEmbeddings),
        [`${p}yarn_beta_fast`]: f32(s.betaFast),
        [`${p}yarn_beta_slow`]: f32(s.betaSlow),
        ...(s.attentionFactor !== yarnAttentionFactor(s.factor)
          ? { [`${p}attn_factor`]: f32(s.attentionFactor / yarnAttentionFactor(s.factor)) }
          : {}),
      };
    case "dynamic":
      throw refuse("rope_scaling.rope_type", "llama.cpp has no dynamic NTK scaling");
    default:
      return {};
  }
}
