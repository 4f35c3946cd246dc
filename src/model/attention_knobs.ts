/**
 * The config fields beyond plain causal attention, read from an HF `config.json` or from GGUF
 * metadata into the same `AttentionKnobs`: a sliding window and the layers that use it, a RoPE
 * base for those layers, the attention scale, soft-caps of attention scores and final logits,
 * and an embedding multiplier. Each family's description says which apply (`arch/`). A value
 * Kiln cannot honour is refused with `InvalidArgument` naming its key.
 */
import { describe } from "../contract/describe.ts";
import { EngineError } from "../contract/errors.ts";
import type { ArchDescription } from "./arch/mod.ts";
import type { GgufMetadata } from "../formats/gguf/metadata.ts";

/** The knobs, every one optional (absent: the plain pre-norm decoder's behaviour). */
export interface AttentionKnobs {
  /** Keys a query sees in a window layer: itself and the `slidingWindow - 1` before it. */
  slidingWindow?: number;
  /** Which layers use the window (only with `slidingWindow`); the others see every key. */
  slidingLayers?: boolean[];
  /** RoPE base of the window layers (unscaled), where it differs from `ropeTheta`. */
  ropeLocalTheta?: number;
  /** Attention's query scale (default 1/sqrt(headDim)). */
  attnScale?: number;
  /** Attention scores become cap·tanh(s / cap). */
  attnSoftcap?: number;
  /** Final logits become cap·tanh(l / cap). */
  finalSoftcap?: number;
  /** Embeddings enter the residual stream multiplied by this. */
  embedScale?: number;
}

/** The window of layer `l` (0: none). */
export function windowOf(c: AttentionKnobs, l: number): number {
  return c.slidingWindow !== undefined && (c.slidingLayers?.[l] ?? true) ? c.slidingWindow : 0;
}

/**
 * The window that bounds what every layer of a `layers`-layer model reads: the smallest layer
 * window when every layer has one, else 0 (a layer that sees every key keeps the whole cache
 * live). A key at position p is read last by the query at p + window - 1.
 */
export function kvWindow(c: AttentionKnobs, layers: number): number {
  let min = Infinity;
  for (let l = 0; l < layers; l++) min = Math.min(min, windowOf(c, l));
  return min === Infinity ? 0 : min;
}

/** The sliding-window layers of `pattern`: layer i when i % pattern < pattern - 1. */
function patternLayers(layers: number, pattern: number | undefined): boolean[] {
  return Array.from(
    { length: layers },
    (_, i) => pattern === undefined || i % pattern < pattern - 1,
  );
}

type Json = Record<string, unknown>;

const refuse = (key: string, why: string) => EngineError.invalidArgument(`config.${key}: ${why}`);

function positive(c: Json, key: string): number | undefined {
  const v = c[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
    throw refuse(key, `expected a positive number, got ${describe(v)}`);
  }
  return v;
}

function windowSize(v: number, maxPositions: number, onError: (why: string) => EngineError) {
  if (!Number.isInteger(v) || v < 1) throw onError(`expected a positive integer, got ${v}`);
  if (v > maxPositions) {
    throw onError(`window ${v} is longer than the context (${maxPositions} positions)`);
  }
  return v;
}

/** The knobs of an HF config of family `arch`. */
export function hfAttentionKnobs(
  c: Json,
  arch: ArchDescription,
  dims: { hiddenSize: number; headDim: number; numLayers: number; maxPositions: number },
): AttentionKnobs {
  const out: AttentionKnobs = {};
  const rule = arch.hf.config.slidingWindow;
  const on = rule !== "ignored" && (c.use_sliding_window === true ||
    (rule === "when_set" && c.sliding_window != null));
  if (on) {
    const v = c.sliding_window;
    if (typeof v !== "number") {
      throw refuse("sliding_window", `expected a number, got ${describe(v)}`);
    }
    out.slidingWindow = windowSize(v, dims.maxPositions, (why) => refuse("sliding_window", why));
    out.slidingLayers = hfWindowLayers(c, arch, dims.numLayers);
    const local = positive(c, "rope_local_base_freq");
    if (local !== undefined) out.ropeLocalTheta = local;
  }
  const scalar = positive(c, "query_pre_attn_scalar");
  if (scalar !== undefined && scalar !== dims.headDim) out.attnScale = 1 / Math.sqrt(scalar);
  const attnCap = positive(c, "attn_logit_softcapping");
  if (attnCap !== undefined) out.attnSoftcap = attnCap;
  const finalCap = positive(c, "final_logit_softcapping");
  if (finalCap !== undefined) out.finalSoftcap = finalCap;
  if (arch.scaleEmbedding) out.embedScale = Math.sqrt(dims.hiddenSize);
  return out;
}

function hfWindowLayers(c: Json, arch: ArchDescription, layers: number): boolean[] {
  const types = c.layer_types;
  if (types !== undefined && types !== null) {
    if (!Array.isArray(types) || types.length !== layers) {
      throw refuse(
        "layer_types",
        `expected an array of ${layers} layer types, got ${describe(types)}`,
      );
    }
    return types.map((t, i) => {
      if (t !== "sliding_attention" && t !== "full_attention") {
        throw refuse(`layer_types[${i}]`, `unsupported layer type ${describe(t)}`);
      }
      return t === "sliding_attention";
    });
  }
  const pattern = c.sliding_window_pattern;
  if (pattern !== undefined && pattern !== null) {
    if (typeof pattern !== "number" || !Number.isInteger(pattern) || pattern < 1) {
      throw refuse(
        "sliding_window_pattern",
        `expected a positive integer, got ${describe(pattern)}`,
      );
    }
    return patternLayers(layers, pattern);
  }
  // Qwen2-style: the window on the layers from max_window_layers on.
  const from = c.max_window_layers;
  if (from !== undefined && from !== null) {
    if (typeof from !== "number" || !Number.isInteger(from) || from < 0) {
      throw refuse("max_window_layers", `expected an integer >= 0, got ${describe(from)}`);
    }
    return Array.from({ length: layers }, (_, i) => i >= from);
  }
  return patternLayers(layers, arch.hf.config.windowPattern);
}

/** The knobs of GGUF metadata (`p`: the architecture's key prefix, `gemma2.`). */
export function ggufAttentionKnobs(
  m: GgufMetadata,
  p: string,
  arch: ArchDescription,
  dims: { hiddenSize: number; numHeads: number; numLayers: number; maxPositions: number },
): AttentionKnobs {
  const out: AttentionKnobs = {};
  const key = `${p}attention.sliding_window`;
  if (!arch.gguf.ignoresSlidingWindow && m.has(key) && m.uint(key) > 0) {
    out.slidingWindow = windowSize(m.uint(key), dims.maxPositions, (why) => m.refuse(key, why));
    out.slidingLayers = ggufWindowLayers(m, `${p}attention.sliding_window_pattern`, arch, dims);
    if (m.has(`${p}rope.freq_base_swa`)) out.ropeLocalTheta = m.positive(`${p}rope.freq_base_swa`);
  }
  if (m.has(`${p}attention.scale`)) out.attnScale = m.positive(`${p}attention.scale`);
  else if (arch.gguf.hiddenPerHeadScaleAt?.includes(dims.numLayers)) {
    out.attnScale = 1 / Math.sqrt(dims.hiddenSize / dims.numHeads);
  }
  const caps = [["attnSoftcap", "attn_logit_softcapping"], [
    "finalSoftcap",
    "final_logit_softcapping",
  ]];
  for (const [field, name] of caps as ["attnSoftcap" | "finalSoftcap", string][]) {
    if (m.has(`${p}${name}`)) out[field] = m.positive(`${p}${name}`);
  }
  if (arch.scaleEmbedding) out.embedScale = Math.sqrt(dims.hiddenSize);
  return out;
}

/**
 * The window layers of GGUF metadata: `sliding_window_pattern` as a number n (layer i when
 * i % n < n - 1), as one boolean per layer, or absent (the family's default pattern).
 */
function ggufWindowLayers(
  m: GgufMetadata,
  key: string,
  arch: ArchDescription,
  dims: { numLayers: number },
): boolean[] {
  const v = m.get(key);
  if (!Array.isArray(v)) {
    return patternLayers(dims.numLayers, m.has(key) ? m.count(key) : arch.hf.config.windowPattern);
  }
  if (v.length !== dims.numLayers || !v.every((b) => typeof b === "boolean")) {
    throw m.refuse(key, `expected a count or ${dims.numLayers} booleans`);
  }
  return v as boolean[];
}
