/**
 * A description's tensor table resolved against a config: each tensor the model holds, under
 * its HF and GGUF names, with its shape in numbers; and the name maps between the two schemes.
 */
import { EngineError } from "../../contract/errors.ts";
import type {
  ArchDescription,
  Dim,
  ExpertRole,
  GlobalRole,
  LayerKind,
  LayerRole,
  TensorEntry,
} from "./arch.ts";

/**
 * The most experts a layer may have (the largest released models have a few hundred): a config
 * asking for more is refused before a tensor name is made for each.
 */
export const MAX_EXPERTS = 1024;

/** A mixture-of-experts MLP's sizes and routing. */
export interface MoeConfig {
  /** Experts per layer. */
  experts: number;
  /** Experts each token runs (top-k of the router's softmax). */
  topK: number;
  /** Width of one expert's gate and up projections. */
  expertIntermediateSize: number;
  /** Renormalise the top-k router weights to sum 1. */
  normTopK: boolean;
  /** The clamp of a `swiglu_oai` expert activation (absent for `silu` experts). */
  swigluLimit?: number;
}

/** The config fields tensor shapes and presence depend on. */
export interface ShapeConfig {
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
  attentionBias: boolean;
  tieWordEmbeddings: boolean;
  /** Mixture-of-experts families: the experts' sizes and routing. */
  moe?: MoeConfig;
  /** Hybrid families: each layer's kind (absent: attention). */
  layerKinds?: readonly LayerKind[];
  /** Taps of a short convolution. */
  convWidth?: number;
  /** A Mamba2 layer's sizes. */
  ssm?: SsmConfig;
  /** A gated delta net layer's sizes. */
  delta?: DeltaConfig;
}

/**
 * A gated delta net layer's sizes: `kHeads` key heads of `kDim`, `vHeads` value heads of `vDim`,
 * and which key head a value head reads: llama.cpp's files tile the value heads (head h reads key
 * head h % kHeads), HF checkpoints group them (h / (vHeads / kHeads)).
 */
export interface DeltaConfig {
  kHeads: number;
  kDim: number;
  vHeads: number;
  vDim: number;
  headMap: "tiled" | "grouped";
}

/** A Mamba2 layer's sizes: `inner` channels in `heads` heads, `groups` of B and C of `state`. */
export interface SsmConfig {
  inner: number;
  state: number;
  groups: number;
  heads: number;
}

/** One tensor of a model: its table entry, layer (-1 for a global one) and names. */
export interface ResolvedTensor<R extends string = LayerRole | GlobalRole> {
  entry: TensorEntry<R>;
  layer: number;
  hf: string;
  gguf: string;
  shape: number[];
  /** For q/k rows: the heads of the projection. */
  heads?: number;
  /** For an expert's tensor: the expert (its GGUF name is the stack of all of them). */
  expert?: number;
  /**
   * The HF tensor that holds it, where `hf` is not one (`TensorEntry.hfRows`: `hf` is then a key
   * of its own, the tensor's name with `#part`).
   */
  hfStored?: string;
}

/** A layer entry's key among a checkpoint's tensors: its HF name, `#part` for a row block. */
function entryKey(e: TensorEntry<string>): string {
  return e.hfRows ? `${e.hf}#${e.hfRows.part}` : e.hf;
}

/** A dimension's size in `c`. */
export function dimSize(c: ShapeConfig, d: Dim): number {
  switch (d) {
    case "hidden":
      return c.hiddenSize;
    case "q":
      return c.numHeads * c.headDim;
    case "kv":
      return c.numKvHeads * c.headDim;
    case "headDim":
      return c.headDim;
    case "inter":
      return c.intermediateSize;
    case "vocab":
      return c.vocabSize;
    case "experts":
    case "expertInter":
      if (c.moe === undefined) {
        throw EngineError.invalidArgument(`config: dimension ${d} of a config without experts`);
      }
      return d === "experts" ? c.moe.experts : c.moe.expertIntermediateSize;
    case "heads":
      return c.numHeads;
    case "qkv":
      return (c.numHeads + 2 * c.numKvHeads) * c.headDim;
    case "inter2":
      return 2 * c.intermediateSize;
    case "hidden3":
      return 3 * c.hiddenSize;
    case "convWidth":
      if (c.convWidth === undefined) {
        throw EngineError.invalidArgument(
          `config: dimension ${d} of a config without convolutions`,
        );
      }
      return c.convWidth;
    case "one":
      return 1;
    case "q2":
      return 2 * c.numHeads * c.headDim;
    case "deltaConv":
    case "deltaQk":
    case "deltaInner":
    case "deltaVHeads":
    case "deltaVDim":
      return deltaDim(c, d);
    default:
      return ssmDim(c, d);
  }
}

/** A Mamba2 dimension's size in `c`. */
function ssmDim(c: ShapeConfig, d: Dim): number {
  const s = c.ssm;
  if (s === undefined) {
    throw EngineError.invalidArgument(`config: dimension ${d} of a config without Mamba2 layers`);
  }
  const conv = s.inner + 2 * s.groups * s.state;
  const sizes: Partial<Record<Dim, number>> = {
    ssmIn: s.inner + conv + s.heads,
    ssmConv: conv,
    ssmInner: s.inner,
    ssmHeads: s.heads,
    ssmGroups: s.groups,
    ssmGroupWidth: s.inner / s.groups,
  };
  const n = sizes[d];
  if (n === undefined) throw EngineError.invalidArgument(`config: unknown dimension ${d}`);
  return n;
}

function present(c: ShapeConfig, e: TensorEntry<string>, layer = -1): boolean {
  if (e.kinds && layer >= 0 && !e.kinds.includes(c.layerKinds?.[layer] ?? "attention")) {
    return false;
  }
  if (e.when === "attentionBias") return c.attentionBias;
  if (e.when === "untiedHead") return !c.tieWordEmbeddings;
  return true;
}

function resolve<R extends string>(
  c: ShapeConfig,
  e: TensorEntry<R>,
  layer: number,
): ResolvedTensor<R> {
  const out: ResolvedTensor<R> = {
    entry: e,
    layer,
    hf: layer < 0 ? e.hf : `model.layers.${layer}.${entryKey(e)}`,
    gguf: layer < 0 ? e.gguf : `blk.${layer}.${e.gguf}`,
    shape: e.shape.map((d) => dimSize(c, d)),
  };
  if (e.heads) out.heads = e.heads === "q" ? c.numHeads : c.numKvHeads;
  if (e.hfRows) out.hfStored = `model.layers.${layer}.${e.hf}`;
  return out;
}

/** The tensors one layer holds, in the table's order. */
export function layerTensors(
  a: ArchDescription,
  c: ShapeConfig,
  layer: number,
): ResolvedTensor<LayerRole>[] {
  return a.tensors.layer.filter((e) => present(c, e, layer)).map((e) => resolve(c, e, layer));
}

/** The global tensors the model holds (the LM head only when untied). */
export function globalTensors(a: ArchDescription, c: ShapeConfig): ResolvedTensor<GlobalRole>[] {
  return a.tensors.global.filter((e) => present(c, e)).map((e) => resolve(c, e, -1));
}

/** Each expert's tensors of one layer, expert by expert (none in a family without experts). */
export function expertTensors(
  a: ArchDescription,
  c: ShapeConfig,
  layer: number,
): ResolvedTensor<ExpertRole>[] {
  const table = a.tensors.experts ?? [];
  if (table.length === 0 || c.moe === undefined) return [];
  const out: ResolvedTensor<ExpertRole>[] = [];
  for (let e = 0; e < c.moe.experts; e++) {
    for (const entry of table) {
      const r = resolve(c, entry, layer);
      r.hf = r.hf.replace("{E}", String(e));
      r.expert = e;
      out.push(r);
    }
  }
  return out;
}

/**
 * The expert entry whose stacked GGUF name (after `blk.N.`) is `suffix`, if any: such a tensor
 * holds every expert's, expert by expert along its outermost axis.
 */
export function expertEntryOfGguf(
  a: ArchDescription,
  suffix: string,
): TensorEntry<ExpertRole> | undefined {
  return a.tensors.experts?.find((e) => e.gguf === suffix);
}

const LAYER_NAME = /^blk\.(0|[1-9]\d{0,5})\.(.+)$/;

/** The HF name of a GGUF tensor name in family `a`, or undefined when it has none. */
export function hfTensorName(a: ArchDescription, ggufName: string): string | undefined {
  const g = a.tensors.global.find((e) => e.gguf === ggufName);
  if (g) return g.hf;
  const m = LAYER_NAME.exec(ggufName);
  const e = m && a.tensors.layer.find((e) => e.gguf === m[2]);
  return e ? `model.layers.${m![1]}.${entryKey(e)}` : undefined;
}

const HF_LAYER_NAME = /^model\.layers\.(0|[1-9]\d{0,5})\.(.+)$/;

/**
 * The GGUF name of an HF tensor name in family `a`, or undefined when it has none. An expert's
 * tensor (`mlp.experts.3.gate_proj.weight`) maps to the stack of all of them (`ffn_gate_exps`).
 */
export function ggufTensorName(a: ArchDescription, hfName: string): string | undefined {
  const g = a.tensors.global.find((e) => e.hf === hfName);
  if (g) return g.gguf;
  const m = HF_LAYER_NAME.exec(hfName);
  if (!m) return undefined;
  const e = a.tensors.layer.find((e) => entryKey(e) === m[2]) ??
    a.tensors.experts?.find((e) => expertPattern(e.hf).test(m[2]!));
  return e ? `blk.${m[1]}.${e.gguf}` : undefined;
}

/** An expert tensor's HF name pattern (`{E}` an expert index) as an exact-match expression. */
function expertPattern(hf: string): RegExp {
  const [before, after] = hf.split("{E}").map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${before}(0|[1-9]\\d{0,5})${after}$`);
}

/** The table entry of a layer role, if the family has one. */
export function layerEntry(
  a: ArchDescription,
  role: LayerRole,
): TensorEntry<LayerRole> | undefined {
  return a.tensors.layer.find((e) => e.role === role);
}

/** A gated delta net dimension's size in `c`. */
function deltaDim(c: ShapeConfig, d: Dim): number {
  const s = c.delta;
  if (s === undefined) {
    throw EngineError.invalidArgument(`config: dimension ${d} of a config without delta layers`);
  }
  const inner = s.vHeads * s.vDim;
  if (d === "deltaConv") return 2 * s.kHeads * s.kDim + inner;
  if (d === "deltaQk") return 2 * s.kHeads * s.kDim;
  if (d === "deltaInner") return inner;
  return d === "deltaVHeads" ? s.vHeads : s.vDim;
}
