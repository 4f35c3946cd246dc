/**
 * A Mamba2 layer's sizes (`ModelConfig.ssm`) and a gated delta net layer's (`ModelConfig.delta`),
 * from llama.cpp's `ssm.*` GGUF keys or from the HF
 * keys a family names (`LayerKinds.ssmHf`), checked against what the kernels hold: `inner`
 * channels in `heads` heads, B and C in `groups` groups of `state` (at most `SSM_MAX_STATE`), the
 * heads and channels dividing evenly into the groups. Anything else is `InvalidArgument` naming
 * the key.
 */
import type { DeltaConfig, LayerKinds, SsmConfig } from "./arch/mod.ts";
import { type Json, positiveInt, refuse } from "./config_fields.ts";
import type { GgufMetadata } from "../formats/gguf/metadata.ts";

/** The largest SSM state the scan kernel holds per channel (`gpu/kernels/ssm_scan.ts`). */
export const MAX_SSM_STATE = 128;

/** `s` checked; `keys` names each field's key for the refusal. */
function checked(
  s: SsmConfig,
  keys: Record<keyof SsmConfig, string>,
  no: (key: string, why: string) => Error,
): SsmConfig {
  if (s.state > MAX_SSM_STATE) {
    throw no(keys.state, `a state of ${s.state} is more than the ${MAX_SSM_STATE} supported`);
  }
  if (s.inner % s.heads !== 0) throw no(keys.heads, `${s.heads} heads do not divide ${s.inner}`);
  if (s.heads % s.groups !== 0 || s.inner % s.groups !== 0) {
    throw no(keys.groups, `${s.groups} groups do not divide ${s.heads} heads of ${s.inner}`);
  }
  return s;
}

/** The sizes from GGUF metadata (`<arch>.ssm.*`, as llama.cpp's converter writes them). */
export function ggufSsm(m: GgufMetadata, p: string): SsmConfig {
  const keys = {
    inner: `${p}ssm.inner_size`,
    state: `${p}ssm.state_size`,
    groups: `${p}ssm.group_count`,
    heads: `${p}ssm.time_step_rank`,
  };
  const s = {
    inner: m.count(keys.inner),
    state: m.count(keys.state),
    groups: m.count(keys.groups),
    heads: m.count(keys.heads),
  };
  return checked(s, keys, (k, why) => m.refuse(k, why));
}

/** The sizes from an HF config, under the family's keys; projection biases are refused. */
export function hfSsm(cfg: Json, kinds: LayerKinds): SsmConfig {
  const k = kinds.ssmHf;
  if (k === undefined) throw refuse("layer_types", "Mamba2 layers in a family without their keys");
  const int = (key: string) => positiveInt(cfg, key, key);
  if (cfg[k.projBias] === true) throw refuse(k.projBias, "projection biases are not supported");
  if (cfg[k.convBias] === false) {
    throw refuse(k.convBias, "a convolution without a bias is not supported");
  }
  const heads = int(k.heads);
  const s = { inner: heads * int(k.headDim), state: int(k.state), groups: int(k.groups), heads };
  return checked(s, { inner: k.headDim, state: k.state, groups: k.groups, heads: k.heads }, refuse);
}

/** A Mamba2 layer's row widths: the input projection (z | x B C | dt) and the convolution's. */
export function ssmWidths(s: SsmConfig): { in: number; conv: number } {
  const conv = s.inner + 2 * s.groups * s.state;
  return { in: s.inner + conv + s.heads, conv };
}

/** The largest key or value head a gated delta net kernel holds (`gated_delta_net.ts`). */
export const MAX_DELTA_DIM = 128;

function checkedDelta(
  d: DeltaConfig,
  keys: Record<"kHeads" | "kDim" | "vHeads" | "vDim", string>,
  no: (key: string, why: string) => Error,
): DeltaConfig {
  for (const k of ["kDim", "vDim"] as const) {
    if (d[k] > MAX_DELTA_DIM) {
      throw no(keys[k], `${d[k]} is more than the ${MAX_DELTA_DIM} supported`);
    }
  }
  if (d.vHeads % d.kHeads !== 0) {
    throw no(keys.vHeads, `${d.vHeads} value heads are not a multiple of ${d.kHeads} key heads`);
  }
  return d;
}

/**
 * A gated delta net's sizes from GGUF metadata: key heads `ssm.group_count` of `ssm.state_size`,
 * value heads `ssm.time_step_rank` sharing `ssm.inner_size`; llama.cpp's files tile the value
 * heads.
 */
export function ggufDelta(m: GgufMetadata, p: string): DeltaConfig {
  const keys = {
    kHeads: `${p}ssm.group_count`,
    kDim: `${p}ssm.state_size`,
    vHeads: `${p}ssm.time_step_rank`,
    vDim: `${p}ssm.inner_size`,
  };
  const vHeads = m.count(keys.vHeads), inner = m.count(keys.vDim);
  if (inner % vHeads !== 0) throw m.refuse(keys.vDim, `${inner} is not ${vHeads} equal heads`);
  const d = {
    kHeads: m.count(keys.kHeads),
    kDim: m.count(keys.kDim),
    vHeads,
    vDim: inner / vHeads,
    headMap: "tiled" as const,
  };
  return checkedDelta(d, keys, (k, why) => m.refuse(k, why));
}

/**
 * A gated delta net's sizes from an HF config. HF groups the value heads by key head; the loader
 * puts them in llama.cpp's tiled order (`TensorEntry.hfTiledHeads`), so the model is tiled.
 */
export function hfDelta(cfg: Json, kinds: LayerKinds): DeltaConfig {
  const k = kinds.deltaHf;
  if (k === undefined) throw refuse("layer_types", "delta layers in a family without their keys");
  const int = (key: string) => positiveInt(cfg, key, key);
  const d = {
    kHeads: int(k.kHeads),
    kDim: int(k.kDim),
    vHeads: int(k.vHeads),
    vDim: int(k.vDim),
    headMap: "tiled" as const,
  };
  return checkedDelta(d, k, refuse);
}

/** A gated delta net's row widths: its q | k | v convolution's and its value width. */
export function deltaWidths(d: DeltaConfig): { conv: number; inner: number } {
  const inner = d.vHeads * d.vDim;
  return { conv: 2 * d.kHeads * d.kDim + inner, inner };
}
