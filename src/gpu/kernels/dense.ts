/** Wrappers for the dense kernels: embedding, RMSNorm, linear, RoPE, SwiGLU and residual add. */
import { storageBuffer } from "../buffers.ts";
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
}

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
    uniform: [a.tokens, a.hidden, a.vocab, 0],
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

export interface LinearArgs {
  x: GPUBuffer;
  w: GPUBuffer;
  b?: GPUBuffer;
  y: GPUBuffer;
  m: number;
  n: number;
  k: number;
  dtype: WeightDtype;
}

/** Rows of activations up to which the matrix-vector kernel is used (per z-slice). */
export const MATVEC_ROWS = 8;
/** Above this many rows the tiled kernel is used. */
export const MATVEC_MAX_M = 32;

/** Invocations per workgroup of the subgroup matrix-vector kernel. */
const SUBGROUP_MATVEC_WG = 128;

/**
 * Output rows per workgroup of the subgroup kernel: one per subgroup at the smallest subgroup
 * size the adapter reports (8 when it reports none), at most 32.
 */
function subgroupRowsPerWorkgroup(device: GPUDevice): number {
  // adapterInfo is newer than some implementations: read it optionally.
  const min = (device.adapterInfo as GPUAdapterInfo | undefined)?.subgroupMinSize;
  const rows = min !== undefined && min > 0 ? SUBGROUP_MATVEC_WG / min : 8;
  return Math.max(1, Math.min(32, Math.floor(rows)));
}

const noBias = new WeakMap<GPUDevice, GPUBuffer>();

/** The shader always declares the bias binding; without a bias it reads this (HAS_BIAS off). */
function emptyBias(device: GPUDevice): GPUBuffer {
  let b = noBias.get(device);
  if (b === undefined) noBias.set(device, b = storageBuffer(device, "linear:no-bias", 4));
  return b;
}

/** y = x·Wᵀ (+ b): the skinny matrix-vector kernel for few rows, the tiled kernel otherwise. */
export function prepareLinear(
  device: GPUDevice,
  a: LinearArgs,
  label = "linear",
): Promise<KernelDispatch> {
  const buffers: Record<number, GPUBuffer> = {
    1: a.x,
    2: a.w,
    3: a.b ?? emptyBias(device),
    4: a.y,
  };
  const constants = { WEIGHT_DTYPE: DTYPE_CODE[a.dtype], HAS_BIAS: a.b ? 1 : 0 };
  const uniform = [a.m, a.n, a.k, 0];
  if (a.m <= MATVEC_MAX_M && a.k % (a.dtype === "f32" ? 4 : 8) === 0) {
    // 16-byte weight loads, four in flight per thread. With subgroups: one subgroup per output
    // row, reduced with subgroupAdd (no barrier); without: 64 threads per row, four rows per
    // workgroup, a workgroup reduction.
    const subgroups = device.features.has("subgroups");
    const rows = subgroups ? subgroupRowsPerWorkgroup(device) : 4;
    const [gx, gy] = grid(device, Math.ceil(a.n / rows));
    return prepareKernel(device, {
      label,
      shader: subgroups ? "matvec_subgroups" : "matvec",
      entry: "main",
      constants: {
        ...constants,
        ROWS: Math.min(a.m, MATVEC_ROWS),
        ...(subgroups ? { WG: SUBGROUP_MATVEC_WG, RPW: rows } : {}),
      },
      uniform,
      buffers,
      workgroups: [gx, gy, Math.ceil(a.m / MATVEC_ROWS)],
    });
  }
  const matvec = a.m <= MATVEC_MAX_M;
  const [gx, gy] = grid(device, a.n);
  return prepareKernel(device, {
    label,
    shader: "matmul",
    entry: matvec ? "matvec" : "tiled",
    constants,
    uniform,
    buffers,
    workgroups: matvec
      ? [gx, gy, Math.ceil(a.m / MATVEC_ROWS)]
      : [Math.ceil(a.n / 16), Math.ceil(a.m / 16)],
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

/** out = silu(gate) * up, elementwise over `count` values. */
export function prepareSwiGlu(
  device: GPUDevice,
  a: { gate: GPUBuffer; up: GPUBuffer; out: GPUBuffer; count: number },
  label = "swiglu",
): Promise<KernelDispatch> {
  return prepareKernel(device, {
    label,
    shader: "elementwise",
    entry: "swiglu",
    uniform: [a.count, 0, 0, 0],
    buffers: { 1: a.gate, 2: a.up, 3: a.out },
    workgroups: grid256(device, a.count),
  });
}

/** a += b over `count` values. */
export function prepareAdd(
  device: GPUDevice,
  a: { a: GPUBuffer; b: GPUBuffer; count: number },
  label = "add",
): Promise<KernelDispatch> {
  return prepareKernel(device, {
    label,
    shader: "elementwise",
    entry: "add",
    uniform: [a.count, 0, 0, 0],
    buffers: { 1: a.a, 2: a.b },
    workgroups: grid256(device, a.count),
  });
}
