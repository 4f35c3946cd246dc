/**
 * One decoder layer's weights as GPU buffers, in the layout the fused step reads: q, k and v
 * stacked into one product (and their biases into one vector), gate and up into one, norm
 * weights and biases widened to f32, and a mixture-of-experts layer's experts as slabs the
 * expert kernels index by expert. `GpuModel` creates the buffers (`LayerBuffers`) in this order,
 * which is the file's, and fills them behind.
 */
import { EngineError } from "../contract/errors.ts";
import { isFloatDtype, type TensorDtype, type WeightDtype } from "../gpu/dtype.ts";
import { type ExpertBiases, expertChunks, type ExpertSlab } from "../gpu/kernels/moe.ts";
import type { GpuWeight } from "../gpu/product/product.ts";
import type { ExpertWeights, ModelWeights, WeightInfo } from "../model/weights.ts";
import { type BufferPlan, planBytes, planStack } from "./upload.ts";

/** One decoder layer's weights as the forward pass reads them. */
export interface GpuLayer {
  /** RMSNorm weights, f32 (pre-norm families). */
  inputNorm?: GPUBuffer;
  /** RMSNorm weights before the MLP, f32 (pre-norm families). */
  postNorm?: GPUBuffer;
  /** [q; k; v] stacked: [heads·head_dim + 2·kv_heads·head_dim, hidden] (attention layers). */
  qkv?: GpuWeight;
  /** [q; k; v] biases, f32 (for every weight format). */
  qkvBias?: GPUBuffer;
  /** Per-head RMSNorm weight of q [head_dim], f32, in families with a `qk_norm` step. */
  qNorm?: GPUBuffer;
  /** Per-head RMSNorm weight of k [head_dim], f32, in families with a `qk_norm` step. */
  kNorm?: GPUBuffer;
  /** Attention output projection: [hidden, heads·head_dim] (attention layers). */
  o?: GpuWeight;
  /** [gate; up] stacked: [2·intermediate, hidden] (a dense MLP). */
  gateUp?: GpuWeight;
  /** MLP down projection: [hidden, intermediate] (a dense MLP). */
  down?: GpuWeight;
  /** A mixture-of-experts MLP's router [experts, hidden]. */
  router?: GpuWeight;
  /** A mixture-of-experts MLP's experts. */
  experts?: GpuExperts;
  /** RMSNorm weight of the attention output before its residual add, f32 (post-norm families). */
  attnOutNorm?: GPUBuffer;
  /** RMSNorm weight of the MLP output before its residual add, f32 (post-norm families). */
  mlpOutNorm?: GPUBuffer;
  // Recipe extras of some families (absent elsewhere), f32.
  /** The attention output projection's bias [hidden]. */
  oBias?: GPUBuffer;
  /** Per-head attention sink logits [heads] (an `attention` step with `sinks`). */
  sinks?: GPUBuffer;
  /** A mixture-of-experts MLP's router bias [experts]. */
  routerBias?: GPUBuffer;
  /** A short-convolution layer's input projection [3·hidden, hidden] and output one. */
  convIn?: GpuWeight;
  convOut?: GpuWeight;
  /** A short-convolution layer's taps [hidden, convWidth], f32. */
  conv?: GPUBuffer;
  /** A Mamba2 layer's input and output projections. */
  ssmIn?: GpuWeight;
  ssmOut?: GpuWeight;
  /** A Mamba2 layer's vectors, f32: conv taps and bias, dt bias, A, D, the grouped norm's weight. */
  ssmConv?: GPUBuffer;
  ssmConvBias?: GPUBuffer;
  ssmDtBias?: GPUBuffer;
  ssmA?: GPUBuffer;
  ssmD?: GPUBuffer;
  ssmNorm?: GPUBuffer;
  /** A gated delta net layer's q | k | v projection, and its z, beta and decay rows stacked. */
  deltaQkv?: GpuWeight;
  deltaZba?: GpuWeight;
}

/**
 * A mixture-of-experts MLP's experts, each matrix kind a slab that the expert kernels index by
 * expert (`moe_experts.wgsl`): every expert's [gate; up] rows, expert after expert, and every
 * expert's down rows; each slab one buffer, or buffers of whole experts where one binding cannot
 * hold it.
 */
export interface GpuExperts {
  /** Every expert's [gate; up] rows. */
  gateUp: ExpertSlab;
  /** Every expert's down rows. */
  down: ExpertSlab;
  /** Every expert's gate, up and down biases, f32, when the experts have them. */
  biases?: ExpertBiases;
}

/** How a layer's buffers are made: each plan one buffer, created now and filled behind. */
export interface LayerBuffers {
  /** One buffer per plan, in order, with its dtype and rows. */
  buffers(plans: BufferPlan[]): { buffer: GPUBuffer; dtype: TensorDtype; rows: number }[];
  /** A weight of `ts` stacked row-wise, split where a binding cannot hold it. */
  weight(label: string, ts: WeightInfo[]): GpuWeight;
  /** `ts` stacked into one buffer of `as` (norms, biases). */
  vector(ts: WeightInfo[], as: WeightDtype): GPUBuffer;
  /** The most bytes one binding holds. */
  limit: number;
  /** The most bytes one buffer of experts may take (`LoadOptions.maxSlabBytes`). */
  maxSlabBytes: number;
}

type LayerTensors = ModelWeights<WeightInfo>["layers"][number];

/** A stacked product's tensors: one that holds them all, or its parts in order. */
function stacked(
  one: WeightInfo | undefined,
  parts: (WeightInfo | undefined)[],
): [string, WeightInfo[]] {
  if (one) return [one.name, [one]];
  const ts = parts.filter((t) => t !== undefined);
  if (ts.length !== parts.length) throw new Error("a layer without its stacked products");
  return [`${ts[0]!.name}+${ts.length - 1}`, ts];
}

/** Layer `l`'s buffers, made through `a` in file order. */
export function layerOnGpu(l: LayerTensors, a: LayerBuffers): GpuLayer {
  const layer: GpuLayer = {};
  if (l.qkv || l.q) layer.qkv = a.weight(...stacked(l.qkv, [l.q, l.k, l.v]));
  if (l.o) layer.o = a.weight(l.o.name, [l.o]);
  if (l.convIn) layer.convIn = a.weight(l.convIn.name, [l.convIn]);
  if (l.conv) layer.conv = a.vector([l.conv], "f32");
  if (l.convOut) layer.convOut = a.weight(l.convOut.name, [l.convOut]);
  if (l.ssmIn) layer.ssmIn = a.weight(l.ssmIn.name, [l.ssmIn]);
  const vectors = ["ssmConv", "ssmConvBias", "ssmDtBias", "ssmA", "ssmD", "ssmNorm"] as const;
  for (const role of vectors) {
    const t = l[role];
    if (t) layer[role] = a.vector([t], "f32");
  }
  if (l.ssmOut) layer.ssmOut = a.weight(l.ssmOut.name, [l.ssmOut]);
  if (l.deltaQkv) layer.deltaQkv = a.weight(l.deltaQkv.name, [l.deltaQkv]);
  if (l.deltaZ && l.deltaBeta && l.deltaAlpha) {
    layer.deltaZba = a.weight(...stacked(undefined, [l.deltaZ, l.deltaBeta, l.deltaAlpha]));
  }
  if ((l.gate && l.up) || l.gateUp) {
    layer.gateUp = a.weight(...stacked(l.gateUp, [l.gate, l.up]));
  }
  if (l.down) layer.down = a.weight(l.down.name, [l.down]);
  for (const role of ["inputNorm", "postNorm", "attnOutNorm", "mlpOutNorm"] as const) {
    const t = l[role];
    if (t) layer[role] = a.vector([t], "f32");
  }
  if (l.router) layer.router = a.weight(l.router.name, [l.router]);
  if (l.experts) layer.experts = expertsOnGpu(l.experts, a);
  for (const role of ["oBias", "sinks", "routerBias"] as const) {
    const t = l[role];
    if (t) layer[role] = a.vector([t], "f32");
  }
  if (l.qBias && l.kBias && l.vBias) {
    layer.qkvBias = a.vector([l.qBias, l.kBias, l.vBias], "f32");
  }
  if (l.qNorm) layer.qNorm = a.vector([l.qNorm], "f32");
  if (l.kNorm) layer.kNorm = a.vector([l.kNorm], "f32");
  return layer;
}

/** A layer's experts: the gate/up and down slabs, then their biases where every expert has them. */
function expertsOnGpu(experts: readonly ExpertWeights<WeightInfo>[], a: LayerBuffers): GpuExperts {
  const name = experts[0]!.gate.name.replace(/\.0\.gate_proj\.weight$/, "");
  const out: GpuExperts = {
    gateUp: expertSlab(`${name}.gate_up`, experts.map((e) => [e.gate, e.up]), a),
    down: expertSlab(`${name}.down`, experts.map((e) => [e.down]), a),
  };
  const biases = expertBiasTensors(experts);
  if (biases) {
    out.biases = { gateUp: a.vector(biases.gateUp, "f32"), down: a.vector(biases.down, "f32") };
  }
  return out;
}

/** A slab of each expert's `ts`, in buffers of whole experts. */
function expertSlab(label: string, ts: WeightInfo[][], a: LayerBuffers): ExpertSlab {
  const [all, ...more] = planStack(label, ts.flat(), Infinity);
  if (more.length > 0) {
    throw new EngineError(
      "ResourceExhausted",
      `${label}: the experts' matrices need one type; they take ${more.length + 1}`,
    );
  }
  const max = Math.min(a.limit, a.maxSlabBytes);
  const counts = expertChunks(label, ts.length, planBytes(all!) / ts.length, max);
  const parts = [];
  let first = 0;
  for (const n of counts) {
    const name = `${label}[${first}..${first + n - 1}]`;
    // Each part in the whole slab's dtype (a float subset could have another common one).
    const as = isFloatDtype(all!.dtype) ? all!.dtype : undefined;
    const [one, ...extra] = a.buffers(planStack(name, ts.slice(first, first + n).flat(), max, as));
    if (!one || extra.length > 0) throw new Error(`${name}: not one buffer`);
    parts.push({ buffer: one.buffer, experts: n });
    first += n;
  }
  return { parts, dtype: all!.dtype };
}

/**
 * The experts' bias tensors in the expert kernels' order (expert e's gate biases then its up
 * biases; every expert's down biases), when every expert has all three; else undefined.
 */
function expertBiasTensors(
  experts: readonly ExpertWeights<WeightInfo>[],
): { gateUp: WeightInfo[]; down: WeightInfo[] } | undefined {
  const gateUp: WeightInfo[] = [], down: WeightInfo[] = [];
  for (const e of experts) {
    if (!e.gateBias || !e.upBias || !e.downBias) return undefined;
    gateUp.push(e.gateBias, e.upBias);
    down.push(e.downBias);
  }
  return { gateUp, down };
}
