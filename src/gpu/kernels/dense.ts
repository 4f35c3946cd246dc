/**
 * Wrappers for the dense kernels: embedding, RMSNorm, RoPE and SwiGLU over stacked gate/up
 * products (the linear layers, with the residual add in their epilogues, are in `linear.ts`).
 */
import { DTYPE_CODE, type WeightDtype } from "../dtype.ts";
import { grid } from "../dispatch.ts";
import { grid256, type KernelDispatch, prepareKernel } from "./kernel.ts";

export interface EmbeddingArgs {
  ids: GPUBuffer;
  table: GPUBuffer;
  out: GPUBuffer;
  tokens: number;
  hidden: number;
  vocab: number;
  dtype: WeightDtype;
  /**
   * The rows `table` holds, when the table is split by rows over several buffers (default: all
   * of them). Tokens whose id is elsewhere are left for the other chunks' dispatches.
   */
  rowStart?: number;
  rowEnd?: number;
}

/** out[t, :] = table[ids[t], :] for the ids in this chunk of the table (see `EmbeddingArgs`). */
export function prepareEmbedding(
  device: GPUDevice,
  a: EmbeddingArgs,
  label = "embedding",
): Promise<KernelDispatch> {
  return prepareKernel(device, {
    label,
    shader: "embedding",
    entry: "main",
    constants: { WEIGHT_DTYPE: DTYPE_CODE[a.dtype] },
    uniform: [a.tokens, a.hidden, a.vocab, a.rowStart ?? 0, a.rowEnd ?? a.vocab, 0, 0, 0],
    buffers: { 1: a.ids, 2: a.table, 3: a.out },
    workgroups: grid256(device, a.tokens * a.hidden),
  });
}

export interface RmsNormArgs {
  x: GPUBuffer;
  weight: GPUBuffer;
  y: GPUBuffer;
  rows: number;
  dim: number;
  eps: number;
  dtype: WeightDtype;
}

export function prepareRmsNorm(
  device: GPUDevice,
  a: RmsNormArgs,
  label = "rmsnorm",
): Promise<KernelDispatch> {
  return prepareKernel(device, {
    label,
    shader: "rmsnorm",
    entry: "main",
    constants: { WEIGHT_DTYPE: DTYPE_CODE[a.dtype] },
    uniform: [a.rows, a.dim, a.eps, 0],
    floats: [2],
    buffers: { 1: a.x, 2: a.weight, 3: a.y },
    workgroups: grid(device, a.rows),
  });
}

export interface RopeArgs {
  x: GPUBuffer;
  positions: GPUBuffer;
  invFreq: GPUBuffer;
  tokens: number;
  heads: number;
  headDim: number;
}

export function prepareRope(
  device: GPUDevice,
  a: RopeArgs,
  label = "rope",
): Promise<KernelDispatch> {
  return prepareKernel(device, {
    label,
    shader: "rope",
    entry: "main",
    uniform: [a.tokens, a.heads, a.headDim, 0],
    buffers: { 1: a.x, 2: a.positions, 3: a.invFreq },
    workgroups: grid256(device, a.tokens * a.heads * (a.headDim / 2)),
  });
}

/**
 * SwiGLU over a product of stacked [gate; up] weights: `stacked` is [rows, 2 * width] (gate in
 * the first half of each row, up in the second), `out` is [rows, width].
 */
export function prepareSwiGluHalves(
  device: GPUDevice,
  a: { stacked: GPUBuffer; out: GPUBuffer; rows: number; width: number },
  label = "swiglu_halves",
): Promise<KernelDispatch> {
  return prepareKernel(device, {
    label,
    shader: "elementwise",
    entry: "swiglu_halves",
    uniform: [a.rows * a.width, a.width, 0, 0],
    buffers: { 1: a.stacked, 3: a.out },
    workgroups: grid256(device, a.rows * a.width),
  });
}
