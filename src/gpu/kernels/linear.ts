/**
 * Linear layers: y = x·Wᵀ (+ b), with what surrounds a product in a transformer fused into it
 * where the shape allows (decode): RMSNorm of x before it, and after it either the residual add
 * (`accumulate`) or SwiGLU over stacked gate and up weights (`swiglu`).
 *
 * `prepareLinear` is the plain product (one dispatch). `prepareFusedLinear` does the fused
 * product in one dispatch of `matvec.wgsl` when it can, and otherwise (prefill shapes, K not a
 * multiple of the 16-byte load) with `gemm.wgsl`, which adds into y itself, plus a norm pass
 * before and a SwiGLU pass after where asked.
 */
import { storageBuffer } from "../buffers.ts";
import { DTYPE_CODE, type WeightDtype } from "../dtype.ts";
import { grid } from "../dispatch.ts";
import { KERNEL_PATHS, kernelPaths } from "../paths.ts";
import { type KernelDispatch, prepareKernel } from "./kernel.ts";
import { prepareRmsNorm, prepareSwiGluHalves } from "./dense.ts";
import { prepareGemm } from "./gemm.ts";

/** Buffers and shape of a product `y = x·Wᵀ (+ b)`. */
export interface LinearArgs {
  /** Activations, f32 [m, k]. */
  x: GPUBuffer;
  /** Weight, `dtype` [n, k] (row-major, one output per row). */
  w: GPUBuffer;
  /** Bias, [n], in the same element type as `w`. */
  b?: GPUBuffer;
  /** Output, f32 [m, n]. */
  y: GPUBuffer;
  /** Rows of activations (tokens). */
  m: number;
  /** Output columns (with `swiglu`: of each of gate and up; W then has 2n rows). */
  n: number;
  /** Inner dimension (columns of x and of W). */
  k: number;
  /** Element type of `w`. */
  dtype: WeightDtype;
}

/** What a fused product does with its result `r`: store it, add it to y, or apply SwiGLU. */
export type Epilogue = "store" | "accumulate" | "swiglu";

/** A product with the RMSNorm before it and the epilogue after it fused in. */
export interface FusedLinearArgs extends LinearArgs {
  /** RMSNorm of x folded in: its weight as f32 [k], and epsilon. */
  norm?: { weight: GPUBuffer; eps: number };
  /** `store` (default): y = r; `accumulate`: y += r; `swiglu`: y = silu(r_gate) * r_up. */
  epilogue?: Epilogue;
  /**
   * Threads per output row of `matvec.wgsl` (a power of two up to 64). By default the device's
   * kernel paths say (1 on `cpu`, 64 on `gpu`); tests set it to cover every variant.
   */
  threadsPerRow?: number;
  /**
   * Output row stride (default n) and column offset (default 0): row i of the result lands at
   * y[i·ldy + y0 …], and the bias is read from b[y0 …]. A product over one part of a weight
   * split by rows writes its columns of the whole output so. Matrix-vector kernel only.
   */
  ldy?: number;
  /** Column offset into each output row (default 0); see `ldy`. */
  y0?: number;
}

/** Rows of activations up to which the matrix-vector kernel is used (per z-slice). */
export const MATVEC_ROWS = 8;
/** Above this many rows the `gpu` kernel paths take the tiled kernel (see `paths.ts`). */
export const MATVEC_MAX_M: number = KERNEL_PATHS.gpu.gemmAboveRows;

/**
 * Threads per output row, per workgroup, and rows per thread of `matvec.wgsl`, for `tpr` threads
 * per row (by default as the device's kernel paths say). With one thread per row (a CPU
 * adapter's paths, where a barrier switches through every invocation in turn) each thread owns
 * `CPU_RPT` whole rows and nothing is reduced; more threads split each row and reduce it.
 */
function matvecThreads(
  device: GPUDevice,
  tpr = kernelPaths(device).matvecThreadsPerRow,
): { tpr: number; wg: number; rpt: number } {
  if (!(Number.isInteger(tpr) && tpr >= 1 && tpr <= 64 && (tpr & (tpr - 1)) === 0)) {
    throw new Error(`threadsPerRow ${tpr} is not a power of two in 1..64`);
  }
  return { tpr, wg: Math.max(64, tpr * 4), rpt: tpr === 1 ? CPU_RPT : 1 };
}

/**
 * Output rows per thread with one thread per row: a load of x then serves eight weight loads
 * (on lavapipe, 1.3× faster than four at one activation row and 2.3× at eight; the loads of x
 * and the arithmetic on them otherwise cost a CPU adapter more than the weights' loads).
 */
const CPU_RPT = 8;

const placeholders = new WeakMap<GPUDevice, GPUBuffer>();

/** Shaders always declare the optional bindings (bias, norm weight); unused ones read this. */
function placeholder(device: GPUDevice): GPUBuffer {
  let b = placeholders.get(device);
  if (b === undefined) placeholders.set(device, b = storageBuffer(device, "linear:unused", 16));
  return b;
}

/**
 * Whether the matrix-vector kernel (16-byte weight loads) takes this shape: K aligned to the
 * load, and at most `maxRows` rows (the device's `kernelPaths(device).gemmAboveRows`: 32 on the
 * `gpu` paths, any number on the `cpu` paths; see `paths.ts` for why).
 */
export function isMatvecShape(
  a: Pick<LinearArgs, "m" | "k" | "dtype">,
  maxRows = MATVEC_MAX_M,
): boolean {
  return a.m <= maxRows && a.k % (a.dtype === "f32" ? 4 : 8) === 0;
}

const EPILOGUE_CODE: Record<Epilogue, number> = { store: 0, accumulate: 1, swiglu: 2 };

/**
 * The fused decode product in one dispatch of `matvec.wgsl`. Needs `isMatvecShape`, or with
 * `anyRows` only its K alignment (the kernel is correct for any M, slower than the tiled GEMM
 * on a GPU beyond `MATVEC_MAX_M` rows).
 */
export function prepareMatvec(
  device: GPUDevice,
  a: FusedLinearArgs,
  label = "matvec",
  anyRows = false,
): Promise<KernelDispatch> {
  if (!isMatvecShape(a, anyRows ? Infinity : kernelPaths(device).gemmAboveRows)) {
    throw new Error(`${label}: not a matrix-vector shape (m ${a.m}, k ${a.k})`);
  }
  if (a.b && a.epilogue === "swiglu") throw new Error(`${label}: no bias with swiglu`);
  const y0 = a.y0 ?? 0, ldy = a.ldy ?? a.n;
  if (ldy < y0 + a.n) throw new Error(`${label}: ldy ${ldy} < y0 ${y0} + n ${a.n}`);
  const uniform = [a.m, a.n, a.k, a.norm?.eps ?? 0, ldy, y0, 0, 0];
  const slices = Math.ceil(a.m / MATVEC_ROWS);
  const { tpr, wg, rpt } = matvecThreads(device, a.threadsPerRow);
  const [gx, gy] = grid(device, Math.ceil(a.n / ((wg / tpr) * rpt)));
  return prepareKernel(device, {
    label,
    shader: "matvec",
    entry: "main",
    constants: {
      WEIGHT_DTYPE: DTYPE_CODE[a.dtype],
      HAS_BIAS: a.b ? 1 : 0,
      ROWS: Math.min(a.m, MATVEC_ROWS),
      TPR: tpr,
      WG: wg,
      RPT: rpt,
      NORM: a.norm ? 1 : 0,
      MODE: EPILOGUE_CODE[a.epilogue ?? "store"],
    },
    uniform,
    floats: [3],
    buffers: {
      1: a.x,
      2: a.w,
      3: a.b ?? placeholder(device),
      4: a.y,
      5: a.norm?.weight ?? placeholder(device),
    },
    workgroups: [gx, gy, slices],
  });
}

/** y = x·Wᵀ (+ b): the matrix-vector kernel for decode shapes, the register-blocked GEMM otherwise. */
export function prepareLinear(
  device: GPUDevice,
  a: LinearArgs,
  label = "linear",
): Promise<KernelDispatch> {
  if (isMatvecShape(a, kernelPaths(device).gemmAboveRows)) return prepareMatvec(device, a, label);
  return prepareGemm(device, a, label);
}

/** Scratch the unfused path needs: f32 buffers of at least m·k (normed x) and m·2n (SwiGLU). */
export interface LinearScratch {
  /** f32, at least m·k: the normed activations. */
  normed: GPUBuffer;
  /** f32, at least m·2n: the gate/up product before SwiGLU. */
  product: GPUBuffer;
}

/** The dispatches of a fused product, in the order they run. */
export interface LinearDispatches {
  /** One dispatch (matrix-vector path) or up to three (norm, product, SwiGLU). */
  dispatches: KernelDispatch[];
}

/**
 * A fused product: one dispatch when `isMatvecShape`, else RMSNorm, the product and the
 * epilogue as separate dispatches through `scratch`.
 */
export async function prepareFusedLinear(
  device: GPUDevice,
  a: FusedLinearArgs,
  scratch: LinearScratch,
  label = "linear",
): Promise<LinearDispatches> {
  if (a.ldy !== undefined || a.y0 !== undefined) {
    return { dispatches: [await prepareMatvec(device, a, label, true)] };
  }
  if (isMatvecShape(a, kernelPaths(device).gemmAboveRows)) {
    return { dispatches: [await prepareMatvec(device, a, label)] };
  }
  // Prepared together (their pipelines compile side by side), run in this order.
  const parts: Promise<KernelDispatch>[] = [];
  let x = a.x;
  if (a.norm) {
    parts.push(
      prepareRmsNorm(device, {
        x: a.x,
        weight: a.norm.weight,
        y: scratch.normed,
        rows: a.m,
        dim: a.k,
        eps: a.norm.eps,
        dtype: "f32",
      }, `${label}:norm`),
    );
    x = scratch.normed;
  }
  const epilogue = a.epilogue ?? "store";
  const { b, y, m, n, k, dtype, w } = a;
  if (epilogue !== "swiglu") {
    const accumulate = epilogue === "accumulate";
    parts.push(
      prepareGemm(device, { x, w, ...(b ? { b } : {}), y, m, n, k, dtype, accumulate }, label),
    );
  } else {
    parts.push(prepareGemm(device, { x, w, y: scratch.product, m, n: 2 * n, k, dtype }, label));
    parts.push(
      prepareSwiGluHalves(device, {
        stacked: scratch.product,
        out: a.y,
        rows: a.m,
        width: a.n,
      }, `${label}:swiglu`),
    );
  }
  const dispatches = await Promise.all(parts);
  return { dispatches };
}
