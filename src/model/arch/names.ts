/**
 * A description's tensor table resolved against a config: each tensor the model holds, under
 * its HF and GGUF names, with its shape in numbers; and the name maps between the two schemes.
 */
import type { ArchDescription, Dim, GlobalRole, LayerRole, TensorEntry } from "./arch.ts";

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
    case "qkv":
      return (c.numHeads + 2 * c.numKvHeads) * c.headDim;
    case "inter2":
      return 2 * c.intermediateSize;
  }
}

function present(c: ShapeConfig, e: TensorEntry<string>): boolean {
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
    hf: layer < 0 ? e.hf : `model.layers.${layer}.${e.hf}`,
    gguf: layer < 0 ? e.gguf : `blk.${layer}.${e.gguf}`,
    shape: e.shape.map((d) => dimSize(c, d)),
  };
  if (e.heads) out.heads = e.heads === "q" ? c.numHeads : c.numKvHeads;
  return out;
}

/** The tensors one layer holds, in the table's order. */
export function layerTensors(
  a: ArchDescription,
  c: ShapeConfig,
  layer: number,
): ResolvedTensor<LayerRole>[] {
  return a.tensors.layer.filter((e) => present(c, e)).map((e) => resolve(c, e, layer));
}

/** The global tensors the model holds (the LM head only when untied). */
export function globalTensors(a: ArchDescription, c: ShapeConfig): ResolvedTensor<GlobalRole>[] {
  return a.tensors.global.filter((e) => present(c, e)).map((e) => resolve(c, e, -1));
}

const LAYER_NAME = /^blk\.(0|[1-9]\d{0,5})\.(.+)$/;

/** The HF name of a GGUF tensor name in family `a`, or undefined when it has none. */
export function hfTensorName(a: ArchDescription, ggufName: string): string | undefined {
  const g = a.tensors.global.find((e) => e.gguf === ggufName);
  if (g) return g.hf;
  const m = LAYER_NAME.exec(ggufName);
  const e = m && a.tensors.layer.find((e) => e.gguf === m[2]);
  return e ? `model.layers.${m![1]}.${e.hf}` : undefined;
}

const HF_LAYER_NAME = /^model\.layers\.(0|[1-9]\d{0,5})\.(.+)$/;

/** The GGUF name of an HF tensor name in family `a`, or undefined when it has none. */
export function ggufTensorName(a: ArchDescription, hfName: string): string | undefined {
  const g = a.tensors.global.find((e) => e.hf === hfName);
  if (g) return g.gguf;
  const m = HF_LAYER_NAME.exec(hfName);
  const e = m && a.tensors.layer.find((e) => e.hf === m[2]);
  return e ? `blk.${m![1]}.${e.gguf}` : undefined;
}

/** The table entry of a layer role, if the family has one. */
export function layerEntry(
  a: ArchDescription,
  role: LayerRole,
): TensorEntry<LayerRole> | undefined {
  return a.tensors.layer.find((e) => e.role === role);
}
