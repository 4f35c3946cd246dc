/**
 * RoPE inverse frequencies from the config, as HF transformers computes them: `default`,
 * `linear` (positions divided by a factor, i.e. inv_freq / factor) and `llama3` (a smooth blend
 * between scaled low frequencies and unscaled high frequencies); and `factors`, per-frequency
 * divisors as a GGUF stores them (`rope_freqs.weight`), used as stored; and `longrope`
 * (Phi-3's LongRoPE, `su`): per-frequency divisors, the short ones for an engine whose context
 * is within the original one, the long ones beyond it (`ropeFactorList`), and an attention factor
 * multiplying the rotated elements; `yarn` (YaRN: a per-frequency
 * blend of interpolated and extrapolated frequencies, and an attention factor), as llama.cpp
 * computes it (where HF's differs, `yarnInvFreq` says how); and `dynamic` (dynamic NTK),
 * computed once for the scaled context as vLLM does (`dynamicNtkTheta`).
 */

export type RopeScaling =
  | { type: "default" }
  | { type: "linear"; factor: number }
  | {
    type: "llama3";
    factor: number;
    lowFreqFactor: number;
    highFreqFactor: number;
    originalMaxPositionEmbeddings: number;
  }
  /** inv_freq[i] / factors[i]: one divisor per frequency (head_dim / 2 of them). */
  | { type: "factors"; factors: readonly number[] }
  | {
    type: "longrope";
    shortFactor: readonly number[];
    longFactor: readonly number[];
    originalMaxPositionEmbeddings: number;
    /**
     * The model's context (`max_position_embeddings`): the default attention factor's scale, and
     * the engine context `ropeFactorList` assumes when given none.
     */
    maxPositionEmbeddings: number;
    attentionFactor: number;
  }
  | {
    type: "yarn";
    /** Context extension: interpolated frequencies are the plain ones over this. */
    factor: number;
    /** The context the model was trained on before the extension. */
    originalMaxPositionEmbeddings: number;
    /** Frequencies turning at least this often over the original context are kept as they are. */
    betaFast: number;
    /** Frequencies turning at most this often over the original context are interpolated. */
    betaSlow: number;
    /**
     * Round the ramp's ends out to whole dimensions (floor, ceil), as llama.cpp always does and
     * HF by default; HF's `truncate: false` (gpt-oss) keeps them fractional.
     */
    truncate: boolean;
    /** What the rotated elements are multiplied by (`yarnAttentionFactor` when not given). */
    attentionFactor: number;
  }
  /** Dynamic NTK: the base raised for a context `factor` times the original (`dynamicNtkTheta`). */
  | { type: "dynamic"; factor: number };

/** LongRoPE's attention factor when no config gives one: sqrt(1 + ln(scale) / ln(original)). */
export function longRopeAttentionFactor(max: number, original: number): number {
  const scale = max / original;
  return scale <= 1 ? 1 : Math.sqrt(1 + Math.log(scale) / Math.log(original));
}

/**
 * YaRN's attention factor (the paper's sqrt(1/t) = 0.1 ln(s) + 1, 1 for s <= 1). With HF's
 * `mscale` and `mscale_all_dim` (DeepSeek's), the ratio of that factor at the two multipliers,
 * as HF computes it and llama.cpp (`rope.scaling.yarn_log_multiplier`, mscale 1).
 */
export function yarnAttentionFactor(factor: number, mscale = 1, mscaleAllDim = 0): number {
  const at = (m: number) => factor <= 1 ? 1 : 0.1 * m * Math.log(factor) + 1;
  return mscale && mscaleAllDim ? at(mscale) / at(mscaleAllDim) : at(1);
}

/** What the rotated elements are multiplied by (LongRoPE's and YaRN's attention factor; else 1). */
export function ropeAttentionFactor(scaling: RopeScaling): number {
  return scaling.type === "longrope" || scaling.type === "yarn" ? scaling.attentionFactor : 1;
}

/**
 * The per-frequency divisors a scaling applies as a list (`factors`, `longrope`), if any.
 * LongRoPE's are chosen by `context`, the most positions one sequence of the engine can reach
 * (`GpuModel.context`, `ReferenceModel.context`; default the model's whole context): the long
 * factors when it exceeds the original context, else the short ones, as llama.cpp chooses by
 * the context it was given (`n_ctx_per_seq > n_ctx_orig_yarn`). So a 128k Phi-3 run with a 4k
 * context rotates as the model was trained at 4k. The choice is per engine, not per request (as
 * HF's, by the current length, would be): switching at a request's length would re-rotate the
 * keys already in the cache, and prefix-cached blocks would differ by who computed them.
 */
export function ropeFactorList(
  scaling: RopeScaling,
  context?: number,
): readonly number[] | undefined {
  if (scaling.type === "factors") return scaling.factors;
  if (scaling.type !== "longrope") return undefined;
  const long = (context ?? scaling.maxPositionEmbeddings) > scaling.originalMaxPositionEmbeddings;
  return long ? scaling.longFactor : scaling.shortFactor;
}

/** The elements of each q/k head that RoPE rotates in layer `layer` (0: none). */
export function layerRotaryDim(
  c: { headDim: number; rotaryDim?: number; noRopeLayers?: readonly number[] },
  layer: number,
): number {
  return c.noRopeLayers?.includes(layer) ? 0 : c.rotaryDim ?? c.headDim;
}

/**
 * Dynamic NTK's base for a context of `factor` times the original, fixed so that every position
 * is rotated the same way whatever the sequence length (a cache stays valid), as vLLM does:
 * theta * (factor * L / L0 - (factor - 1))^(dim / (dim - 2)) with L = factor * L0. HF instead
 * recomputes the base from the current length once it passes L0 (positions then change angle
 * as the sequence grows); llama.cpp has no dynamic scaling.
 */
export function dynamicNtkTheta(theta: number, dim: number, factor: number): number {
  return theta * (factor * factor - (factor - 1)) ** (dim / (dim - 2));
}

/**
 * The dimension index (fractional) whose frequency turns `turns` times over `context`
 * positions: dim * ln(context / (2 pi turns)) / (2 ln theta).
 */
export function yarnCorrectionDim(
  dim: number,
  theta: number,
  context: number,
  turns: number,
): number {
  return (dim * Math.log(context / (turns * 2 * Math.PI))) / (2 * Math.log(theta));
}

/**
 * YaRN (arXiv 2309.00071) on inverse frequencies `plain` of a `dim`-element rotation: frequency i
 * is `plain[i] / factor` (interpolated) below the ramp's start `low` (the dimension turning
 * `betaFast` times over the original context, floored when truncating), `plain[i]` (kept) past
 * its end `high` (`betaSlow` turns, ceiled), and a linear blend between, with weight
 * (i - low) / (high - low) for the interpolated one (the width at least 0.001). This is ggml's
 * `rope_yarn` with `ext_factor` 1 (llama.cpp's for YaRN); HF's is the same but for `truncate`.
 */
export function yarnInvFreq(
  plain: Float64Array,
  dim: number,
  theta: number,
  s: Extract<RopeScaling, { type: "yarn" }>,
): Float64Array {
  const old = s.originalMaxPositionEmbeddings;
  let low = yarnCorrectionDim(dim, theta, old, s.betaFast);
  let high = yarnCorrectionDim(dim, theta, old, s.betaSlow);
  if (s.truncate) [low, high] = [Math.floor(low), Math.ceil(high)];
  low = Math.max(low, 0);
  high = Math.min(high, dim - 1);
  const width = Math.max(high - low, 0.001);
  return plain.map((f, i) => {
    const interpolated = Math.min(1, Math.max(0, (i - low) / width));
    return (f / s.factor) * interpolated + f * (1 - interpolated);
  });
}

/**
 * inv_freq[i] = 1 / theta^(2i / dim) for i < dim/2, then scaled. Float64. `context` is the
 * engine's (see `ropeFactorList`); only LongRoPE depends on it.
 */
export function ropeInvFreq(
  headDim: number,
  theta: number,
  scaling: RopeScaling = { type: "default" },
  context?: number,
): Float64Array {
  const half = headDim / 2;
  const out = new Float64Array(half);
  const base = scaling.type === "dynamic" ? dynamicNtkTheta(theta, headDim, scaling.factor) : theta;
  for (let i = 0; i < half; i++) out[i] = 1 / base ** ((2 * i) / headDim);
  if (scaling.type === "yarn") return yarnInvFreq(out, headDim, theta, scaling);
  if (scaling.type === "linear") {
    for (let i = 0; i < half; i++) out[i] = out[i]! / scaling.factor;
  } else if (scaling.type === "factors" || scaling.type === "longrope") {
    const factors = ropeFactorList(scaling, context)!;
    for (let i = 0; i < half; i++) out[i] = out[i]! / factors[i]!;
  } else if (scaling.type === "llama3") {
    const { factor, lowFreqFactor, highFreqFactor, originalMaxPositionEmbeddings: old } = scaling;
    const lowWavelen = old / lowFreqFactor;
    const highWavelen = old / highFreqFactor;
    for (let i = 0; i < half; i++) {
      const f = out[i]!;
      const wavelen = (2 * Math.PI) / f;
      if (wavelen < highWavelen) continue; // high frequency: unchanged
      if (wavelen > lowWavelen) {
        out[i] = f / factor; // low frequency: fully scaled
        continue;
      }
      const smooth = (old / wavelen - lowFreqFactor) / (highFreqFactor - lowFreqFactor);
      out[i] = (1 - smooth) * (f / factor) + smooth * f;
    }
  }
  return out;
}
