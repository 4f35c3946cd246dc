/**
 * RoPE inverse frequencies from the config, as HF transformers computes them: `default`,
 * `linear` (positions divided by a factor, i.e. inv_freq / factor) and `llama3` (a smooth blend
 * between scaled low frequencies and unscaled high frequencies); and `factors`, per-frequency
 * divisors as a GGUF stores them (`rope_freqs.weight`), used as stored; and `longrope`
 * (Phi-3's LongRoPE, `su`): per-frequency divisors, the short ones for a model whose context
 * is within the original one, the long ones beyond it (llama.cpp chooses by its context the
 * same way), and an attention factor multiplying the rotated elements.
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
    /** The model's context: above the original one, the long factors apply. */
    maxPositionEmbeddings: number;
    attentionFactor: number;
  };

/** LongRoPE's attention factor when no config gives one: sqrt(1 + ln(scale) / ln(original)). */
export function longRopeAttentionFactor(max: number, original: number): number {
  const scale = max / original;
  return scale <= 1 ? 1 : Math.sqrt(1 + Math.log(scale) / Math.log(original));
}

/** What the rotated elements are multiplied by (LongRoPE's attention factor; else 1). */
export function ropeAttentionFactor(scaling: RopeScaling): number {
  return scaling.type === "longrope" ? scaling.attentionFactor : 1;
}

/** The per-frequency divisors a scaling applies as a list (`factors`, `longrope`), if any. */
export function ropeFactorList(scaling: RopeScaling): readonly number[] | undefined {
  if (scaling.type === "factors") return scaling.factors;
  if (scaling.type !== "longrope") return undefined;
  const long = scaling.maxPositionEmbeddings > scaling.originalMaxPositionEmbeddings;
  return long ? scaling.longFactor : scaling.shortFactor;
}

/** The elements of each q/k head that RoPE rotates in layer `layer` (0: none). */
export function layerRotaryDim(
  c: { headDim: number; rotaryDim?: number; noRopeLayers?: readonly number[] },
  layer: number,
): number {
  return c.noRopeLayers?.includes(layer) ? 0 : c.rotaryDim ?? c.headDim;
}

/** inv_freq[i] = 1 / theta^(2i / dim) for i < dim/2, then scaled. Float64. */
export function ropeInvFreq(
  headDim: number,
  theta: number,
  scaling: RopeScaling = { type: "default" },
): Float64Array {
  const half = headDim / 2;
  const out = new Float64Array(half);
  for (let i = 0; i < half; i++) out[i] = 1 / theta ** ((2 * i) / headDim);
  if (scaling.type === "linear") {
    for (let i = 0; i < half; i++) out[i] = out[i]! / scaling.factor;
  } else if (scaling.type === "factors" || scaling.type === "longrope") {
    const factors = ropeFactorList(scaling)!;
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
