/**
 * Hybrid families' layers: which layers are attention and which are recurrent (a short
 * convolution, ...), read from an HF `config.json` or GGUF metadata as the family's description
 * says (`ArchDescription.kinds`), and the recipe each layer runs. A family without kinds has
 * attention layers only and none of these fields. Anything out of range is refused with
 * `InvalidArgument` naming the key.
 */
import { describe } from "../contract/describe.ts";
import type { ArchDescription, DeltaConfig, LayerKind, LayerStep, SsmConfig } from "./arch/mod.ts";
import { ggufDelta, ggufSsm, hfDelta, hfSsm } from "./ssm_config.ts";
import { archOf } from "./arch/mod.ts";
import { type Json, positiveInt, refuse } from "./config_fields.ts";
import type { GgufMetadata } from "../formats/gguf/metadata.ts";

/** The config fields of a hybrid family's layers. */
export interface LayerKindFields {
  /** Each layer's kind (absent: every layer attention). */
  layerKinds?: LayerKind[];
  /** Taps of the recurrent layers' causal convolution (`short_conv`, `mamba2`). */
  convWidth?: number;
  /** A Mamba2 layer's sizes (families with `mamba2` layers). */
  ssm?: SsmConfig;
  /** A gated delta net layer's sizes (families with `delta_net` layers). */
  delta?: DeltaConfig;
}

/** The most taps a short convolution may have (LFM2's have 3; the kernel holds 8). */
export const MAX_CONV_WIDTH = 8;

/** The kind of layer `l` of `c` (attention in a family without kinds). */
export function layerKind(c: { layerKinds?: readonly LayerKind[] }, l: number): LayerKind {
  return c.layerKinds?.[l] ?? "attention";
}

/** Whether layer `l` keeps keys and values (an attention layer). */
export function hasKv(c: { layerKinds?: readonly LayerKind[] }, l: number): boolean {
  return layerKind(c, l) === "attention";
}

/** The layers of `c` that keep keys and values. */
export function kvLayers(c: { numLayers: number; layerKinds?: readonly LayerKind[] }): number {
  let n = 0;
  for (let l = 0; l < c.numLayers; l++) if (hasKv(c, l)) n++;
  return n;
}

/** Whether any layer of `c` keeps a recurrent state per sequence. */
export function isRecurrent(c: { layerKinds?: readonly LayerKind[] }): boolean {
  return c.layerKinds?.some((k) => k !== "attention") === true;
}

/** The recipe of layer `l`: its kind's, or the family's attention layer. */
export function layerRecipe(
  c: { arch: string; layerKinds?: readonly LayerKind[] },
  l: number,
): readonly LayerStep[] {
  const arch = archOf(c);
  const kind = layerKind(c, l);
  if (kind === "attention") return arch.layer;
  const recipe = arch.kinds?.recipes[kind];
  if (recipe === undefined) throw refuse("layer_types", `no recipe for a ${kind} layer`);
  return recipe;
}

function checkWidth(width: number, key: string, refuseAs: (k: string, w: string) => Error) {
  if (width < 2 || width > MAX_CONV_WIDTH) {
    throw refuseAs(key, `${width} taps are not supported (2 to ${MAX_CONV_WIDTH})`);
  }
  return width;
}

/** The kinds from an HF config: `kinds.hfKey` lists one name per layer. */
export function hfLayerKinds(cfg: Json, arch: ArchDescription, numLayers: number): LayerKindFields {
  const k = arch.kinds;
  if (k === undefined) return {};
  const names = cfg[k.hfKey];
  if (!Array.isArray(names) || names.length !== numLayers) {
    throw refuse(k.hfKey, `expected ${numLayers} layer types, got ${describe(names)}`);
  }
  const layerKinds = names.map((n, l) => {
    const kind = typeof n === "string" && Object.hasOwn(k.hfNames, n) ? k.hfNames[n] : undefined;
    if (kind === undefined) {
      throw refuse(
        `${k.hfKey}[${l}]`,
        `unknown layer type ${describe(n)} (${Object.keys(k.hfNames).join(", ")})`,
      );
    }
    return kind;
  });
  const out: LayerKindFields = { layerKinds };
  if (layerKinds.includes("short_conv") && cfg.conv_bias === true) {
    throw refuse("conv_bias", "a short convolution with a bias is not supported");
  }
  if (k.convWidth && layerKinds.some((x) => x !== "attention")) {
    const key = k.convWidth.hf;
    out.convWidth = checkWidth(positiveInt(cfg, key, key), key, refuse);
  }
  if (layerKinds.includes("mamba2")) out.ssm = hfSsm(cfg, k);
  if (layerKinds.includes("delta_net")) out.delta = hfDelta(cfg, k);
  return out;
}

/**
 * The kinds from GGUF metadata and the KV heads of the attention layers: a hybrid file's
 * `attention.head_count_kv` is an array with one entry per layer, 0 for a recurrent layer, the
 * same count for every attention layer.
 */
export function ggufLayerKinds(
  m: GgufMetadata,
  p: string,
  arch: ArchDescription,
  numLayers: number,
  numHeads: number,
): LayerKindFields & { numKvHeads: number } {
  const key = `${p}attention.head_count_kv`;
  const k = arch.kinds;
  if (k?.ggufMarks === "flags") return flaggedKinds(m, p, k, numLayers, numHeads);
  if (k === undefined || !Array.isArray(m.get(key))) {
    return { numKvHeads: m.count(key, numHeads) };
  }
  const counts = m.uints(key);
  if (counts.length !== numLayers) {
    throw m.refuse(key, `${counts.length} entries for ${numLayers} layers`);
  }
  const attention = [...new Set(counts.filter((n) => n > 0))];
  if (attention.length !== 1) {
    throw m.refuse(key, `expected one KV head count for every attention layer, got ${counts}`);
  }
  const layerKinds = counts.map((n): LayerKind => n === 0 ? k.ggufZeroKvHeads : "attention");
  const out: LayerKindFields & { numKvHeads: number } = { numKvHeads: attention[0]!, layerKinds };
  return withSizes(out, m, p, k);
}

/** The convolution width and the recurrent sizes of the kinds `out` holds (GGUF). */
function withSizes<T extends LayerKindFields>(
  out: T,
  m: GgufMetadata,
  p: string,
  k: NonNullable<ArchDescription["kinds"]>,
): T {
  const kinds = out.layerKinds ?? [];
  if (k.convWidth && kinds.some((x) => x !== "attention") && out.convWidth === undefined) {
    const wKey = `${p}${k.convWidth.gguf}`;
    out.convWidth = checkWidth(m.count(wKey), wKey, (kk, why) => m.refuse(kk, why));
  }
  if (kinds.includes("mamba2")) out.ssm = ggufSsm(m, p);
  if (kinds.includes("delta_net")) out.delta = ggufDelta(m, p);
  return out;
}

/**
 * Kinds marked by llama.cpp's `attention.recurrent_layers` booleans (true: the family's
 * recurrent kind), else every `full_attention_interval`-th layer attention (default 4); one KV
 * head count for the attention layers.
 */
function flaggedKinds(
  m: GgufMetadata,
  p: string,
  k: NonNullable<ArchDescription["kinds"]>,
  numLayers: number,
  numHeads: number,
): LayerKindFields & { numKvHeads: number } {
  const flagsKey = `${p}attention.recurrent_layers`;
  let flags: boolean[];
  if (m.has(flagsKey)) {
    const v = m.get(flagsKey);
    if (!Array.isArray(v) || v.length !== numLayers || v.some((f) => typeof f !== "boolean")) {
      throw m.refuse(flagsKey, `expected ${numLayers} booleans, got ${describe(v)}`);
    }
    flags = v as boolean[];
  } else {
    const every = m.count(`${p}full_attention_interval`, 4);
    flags = Array.from({ length: numLayers }, (_, l) => (l + 1) % every !== 0);
  }
  if (flags.every((f) => f)) throw m.refuse(flagsKey, "no attention layer");
  const layerKinds = flags.map((f): LayerKind => f ? k.ggufZeroKvHeads : "attention");
  const numKvHeads = m.count(`${p}attention.head_count_kv`, numHeads);
  return withSizes({ numKvHeads, layerKinds }, m, p, k);
}

/** Whether the attention layers of `c` compute a gated query (`attn_norm_qkv`'s `gatedQuery`). */
export function hasGatedQuery(c: { arch: string }): boolean {
  return archOf(c).layer.some((s) => s.op === "attn_norm_qkv" && s.gatedQuery === true);
}
