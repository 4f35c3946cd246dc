/**
 * Wrappers for the dense kernels: embedding, RMSNorm, RoPE and SwiGLU over stacked gate/up
 * products (the linear layers, with the residual add in their epilogues, are in `../product/`).
 */
import { EngineError } from "../../contract/errors.ts";
import { DTYPE_CODE, type WeightDtype } from "../dtype.ts";
import { grid } from "../dispatch.ts";
import { grid256, type KernelDispatch, prepareKernel } from "./kernel.ts";

/** A gated MLP's activation: SiLU (SwiGLU) or GELU with the tanh approximation (GeGLU). */
export type GateActivation = "silu" | "gelu_tanh";

/** Buffers and shape of {@linkcode prepareEmbedding}. */
export interface EmbeddingArgs {
  /** Token ids, u32 [tokens]. */
  ids: GPUBuffer;
  /** Embedding rows in `dtype` (rows `rowStart..rowEnd` of [vocab, hidden]). */
  table: GPUBuffer;
  /** Output, f32 [tokens, hidden]. */
  out: GPUBuffer;
  /** Number of tokens. */
  tokens: number;
  /** Width of a row. */
  hidden: number;
  /** Rows of the whole table. */
  vocab: number;
  /** Element type of `table`. */
  dtype: WeightDtype;
  /**
   * The rows `table` holds, when the table is split by rows over several buffers (default: all
   * of them). Tokens whose id is elsewhere are left for the other chunks' dispatches.
   */
  rowStart?: number;
  /** End (exclusive) of the rows `table` holds (default `vocab`). */
  rowEnd?: number;
  /** Every embedding value times this (default 1). */
  scale?: number;
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
    uniform: [
      a.tokens,
      a.hidden,
      a.vocab,
      a.rowStart ?? 0,
      a.rowEnd ?? a.vocab,
      a.scale ?? 1,
      0,
      0,
    ],
    floats: [5],
    buffers: { 1: a.ids, 2: a.table, 3: a.out },
    workgroups: grid256(device, a.tokens * a.hidden),
  });
}

/** Buffers and shape of {@linkcode prepareRmsNorm}. */
export interface RmsNormArgs {
  /** Input, f32 [rows, dim]. */
  x: GPUBuffer;
  /** Norm weight, `dtype` [dim]. */
  weight: GPUBuffer;
  /** Output, f32 [rows, dim]. */
  y: GPUBuffer;
  /** Number of rows. */
  rows: number;
  /** Width of a row. */
  dim: number;
  /** Added to the mean square before the square root. */
  eps: number;
  /** Element type of `weight`. */
  dtype: WeightDtype;
  /** Add the normed rows to `y` (a post-norm before a residual add) instead of storing them. */
  accumulate?: boolean;
}

/**
 * `y[r, :] = x[r, :] / sqrt(mean(x[r, :]²) + eps) * weight` (with `accumulate`, `y += ...`), one
 * workgroup per row.
 */
export function prepareRmsNorm(
  device: GPUDevice,
  a: RmsNormArgs,
  label = "rmsnorm",
): Promise<KernelDispatch> {
  return prepareKernel(device, {
    label,
    shader: "rmsnorm",
    entry: "main",
    constants: { WEIGHT_DTYPE: DTYPE_CODE[a.dtype], ACCUMULATE: a.accumulate ? 1 : 0 },
    uniform: [a.rows, a.dim, a.eps, 1, a.dim, 0, 0, 0],
    floats: [2],
    buffers: { 1: a.x, 2: a.weight, 3: a.y },
    workgroups: grid(device, a.rows),
  });
}

/** Buffers and shape of {@linkcode prepareHeadNorm}. */
export interface HeadNormArgs {
  /** f32 rows of `stride` elements per token (a fused q/k/v output); normalized in place. */
  x: GPUBuffer;
  /** Norm weight, `dtype` [headDim], shared by every head. */
  weight: GPUBuffer;
  /** Number of tokens. */
  tokens: number;
  /** Heads per token to normalize, `headDim` elements each, one after another. */
  heads: number;
  /** Width of a head. */
  headDim: number;
  /** Elements from one token's row to the next. */
  stride: number;
  /** Element where token 0's first head starts. */
  offset: number;
  /** Added to the mean square before the square root. */
  eps: number;
  /** Element type of `weight`. */
  dtype: WeightDtype;
}

/**
 * A per-head RMSNorm in place: for each token t and head h, the `headDim` elements at
 * `offset + t·stride + h·headDim` are normalized with `weight` (one workgroup per head).
 */
export function prepareHeadNorm(
  device: GPUDevice,
  a: HeadNormArgs,
  label = "head_norm",
): Promise<KernelDispatch> {
  const rows = a.tokens * a.heads;
  return prepareKernel(device, {
    label,
    shader: "rmsnorm",
    entry: "in_place",
    constants: { WEIGHT_DTYPE: DTYPE_CODE[a.dtype] },
    uniform: [rows, a.headDim, a.eps, a.heads, a.stride, a.offset, 0, 0],
    floats: [2],
    buffers: { 2: a.weight, 3: a.x },
    workgroups: grid(device, rows),
  });
}

/** Buffers and shape of {@linkcode prepareRope}. */
export interface RopeArgs {
  /** Queries or keys, f32 [tokens, heads, headDim], rotated in place. */
  x: GPUBuffer;
  /** Position of each token, u32 [tokens]. */
  positions: GPUBuffer;
  /** The inverse frequencies, [headDim / 2], as `uploadRopeFrequencies` stores them. */
  frequencies: GPUBuffer;
  /** Number of tokens. */
  tokens: number;
  /** Heads per token. */
  heads: number;
  /** Width of a head (even). */
  headDim: number;
}

/**
 * Rotary position embedding in place, HF rotate-half convention: `(x[i], x[i + headDim/2])` rotates
 * by `position * invFreq[i]` (reduced modulo a turn exactly; see `rope_frequencies.ts`).
 */
export function prepareRope(
  device: GPUDevice,
  a: RopeArgs,
  label = "rope",
): Promise<KernelDispatch> {
  return prepareKernel(device, {
    label,
    shader: "rope",
    entry: "main",
    uniform: [a.tokens, a.heads, a.headDim, 0, 0, 0, 0, 0],
    buffers: { 1: a.x, 2: a.positions, 3: a.frequencies },
    workgroups: grid256(device, a.tokens * a.heads * (a.headDim / 2)),
  });
}

/**
 * The gated activation over a product of stacked [gate; up] weights: `stacked` is
 * [rows, 2 * width] (gate in the first half of each row, up in the second), `out` is
 * [rows, width] = act(gate)·up, `act` SiLU (SwiGLU, the default) or GELU-tanh (GeGLU).
 */
export function prepareGatedHalves(
  device: GPUDevice,
  a: { stacked: GPUBuffer; out: GPUBuffer; rows: number; width: number; act?: GateActivation },
  label = "gated_halves",
): Promise<KernelDispatch> {
  return prepareKernel(device, {
    label,
    shader: "elementwise",
    entry: "gated_halves",
    constants: { ACT: a.act === "gelu_tanh" ? 1 : 0 },
    uniform: [a.rows * a.width, a.width, 0, 0],
    buffers: { 1: a.stacked, 3: a.out },
    workgroups: grid256(device, a.rows * a.width),
  });
}

/**
 * In place over `count` f32 of `x`: `x *= value` (`scale`), or `x = value·tanh(x / value)`
 * (`softcap`). `value` must be finite and > 0.
 */
export function prepareScaleInPlace(
  device: GPUDevice,
  a: { x: GPUBuffer; count: number; op: "scale" | "softcap"; value: number },
  label = `${a.op}_in_place`,
): Promise<KernelDispatch> {
  if (!(Number.isFinite(a.value) && a.value > 0)) {
    return Promise.reject(
      EngineError.invalidArgument(`${label}: ${a.op} ${a.value} is not a finite number > 0`),
    );
  }
  return prepareKernel(device, {
    label,
    shader: "elementwise",
    entry: "scale_in_place",
    uniform: [a.count, 0, a.op === "scale" ? 0 : 1, a.value],
    floats: [3],
    buffers: { 3: a.x },
    workgroups: grid256(device, a.count),
  });
}
