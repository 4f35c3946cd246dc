/**
 * The one door to a product against a weight as the model holds it on the GPU, in any format
 * (float F32/F16/BF16 or GGUF block-quantized, `../formats/registry.ts`): `prepareProduct`. One
 * family of kernels, `matvec.ts` for decode and `gemm.ts` for prefill (`shaders/product/`),
 * composed per format; float weights of a width that is not a multiple of 32 take the general
 * float GEMM (`float_gemm.ts`). A weight is in one buffer or split by rows over several: it is
 * split when it is bigger than one binding (a large vocabulary's embedding) or when tensors
 * stacked for one product (q/k/v, gate/up) have different types, as in Q4_K_M files where v and
 * down often are Q6_K.
 *
 * One buffer: one fused dispatch, RMSNorm and epilogue included. Several: one dispatch per part,
 * each writing its columns of the output (its own copy of the norm folded in); with SwiGLU, the
 * parts fill a scratch [m, 2n] and a SwiGLU pass follows.
 */
import { EngineError } from "../../contract/errors.ts";
import { isFloatDtype, type TensorDtype } from "../dtype.ts";
import { productTakes } from "../formats/registry.ts";
import { prepareGatedHalves } from "../kernels/dense.ts";
import type { KernelDispatch } from "../kernels/kernel.ts";
import { KERNEL_PATHS, PATH_KINDS } from "../paths.ts";
import {
  type Epilogue,
  gateActivation,
  isGated,
  type LinearScratch,
  type ProductKernelArgs,
} from "./args.ts";
import { prepareUnfusedProduct } from "./float_gemm.ts";
import { gemmMinRows, prepareTiledGemm } from "./gemm.ts";
import { MATVEC_ROWS, prepareMatvec } from "./matvec.ts";

/** `rows` consecutive rows of a weight, in one buffer of `dtype`. */
export interface WeightPart {
  /** The buffer holding the rows. */
  buffer: GPUBuffer;
  /** Element type of the rows (float or GGUF block-quantized). */
  dtype: TensorDtype;
  /** Number of rows. */
  rows: number;
}

/** A weight matrix on the GPU: its rows, in order, over one or more buffers. */
export interface GpuWeight {
  /** The parts, in row order; their `rows` sum to the weight's. */
  parts: WeightPart[];
}

/** One product `y = epilogue(norm(x) · weightᵀ + b)` through the one door, `prepareProduct`. */
export interface ProductArgs {
  /** Activations, f32 [m, k]. */
  x: GPUBuffer;
  /** [n, k] (with `swiglu`, [2n, k]: gate then up). */
  weight: GpuWeight;
  /** Bias over all n output columns, f32. */
  b?: GPUBuffer;
  /** Output, f32 [m, n]. */
  y: GPUBuffer;
  /** Rows of activations. */
  m: number;
  /** Output columns (weight rows; with `swiglu`, half of them). */
  n: number;
  /** The reduced dimension: activation columns, weight columns. */
  k: number;
  /** RMSNorm of each activation row (by `weight`, with `eps`) before the product. */
  norm?: { weight: GPUBuffer; eps: number };
  /** What happens to the product: stored, added to `y`, or gated (see `Epilogue`). */
  epilogue?: Epilogue;
  /** The product (bias included) times this before it is stored or added (default 1). */
  scale?: number;
}

/**
 * Row counts (M) that together take every pipeline `prepareProduct` can choose for 1 to `maxRows`
 * rows of activations, on any device: the matrix-vector kernel is specialized for each M up to
 * the rows of one z-slice (`MATVEC_ROWS`), larger M reuse that slice; above a kernel
 * paths' `gemmAboveRows` the tiled kernel takes over, one pipeline for every M (the general float
 * GEMM, for widths the product kernels do not take, likewise). An engine builds its step plans at
 * these sizes while it starts, so no request compiles a pipeline.
 */
export function productRowClasses(maxRows: number): number[] {
  const slice = MATVEC_ROWS;
  const out = new Set<number>();
  for (let m = 1; m <= Math.min(slice, maxRows); m++) out.add(m);
  if (maxRows > slice) out.add(slice + 1);
  for (const kind of PATH_KINDS) {
    const above = KERNEL_PATHS[kind].gemmAboveRows;
    if (maxRows > above) out.add(above + 1);
  }
  return [...out].sort((a, b) => a - b);
}

/** The dtype of a weight's parts when they all share one, else undefined. */
export function weightDtype(w: GpuWeight): TensorDtype | undefined {
  const d = w.parts[0]?.dtype;
  return w.parts.every((p) => p.dtype === d) ? d : undefined;
}

async function partProduct(
  device: GPUDevice,
  a: ProductArgs,
  part: WeightPart,
  out: { y: GPUBuffer; n: number; ldy?: number; y0?: number; epilogue: Epilogue },
  scratch: LinearScratch,
  label: string,
): Promise<KernelDispatch[]> {
  const { x, m, k } = a;
  const placed = out.ldy === undefined ? {} : { ldy: out.ldy, y0: out.y0 ?? 0 };
  const common = {
    x,
    y: out.y,
    m,
    n: out.n,
    k,
    ...(a.b ? { b: a.b } : {}),
    ...(a.norm ? { norm: a.norm } : {}),
    ...(a.scale !== undefined ? { scale: a.scale } : {}),
    ...placed,
  };
  const { b, ...rest } = common;
  const args = { ...rest, ...(b ? { bias: b } : {}), w: part.buffer, type: part.dtype };
  return await prepareWeightProduct(device, { ...args, epilogue: out.epilogue }, scratch, label);
}

/**
 * y = epilogue(norm(x)·Wᵀ + b) over a weight in one or more parts. Returns the dispatches in
 * order; their uniform buffers belong to the caller.
 */
export async function prepareProduct(
  device: GPUDevice,
  a: ProductArgs,
  scratch: LinearScratch,
  label: string,
): Promise<KernelDispatch[]> {
  // Checked here for every kind of part: a float product would otherwise compile a kernel for
  // no rows (a step without logit rows once asked for an LM head over m = 0).
  for (const [name, v] of [["m", a.m], ["n", a.n], ["k", a.k]] as const) {
    if (!(Number.isInteger(v) && v >= 1)) {
      throw EngineError.invalidArgument(`${label}: ${name} must be an integer >= 1, got ${v}`);
    }
  }
  const epilogue = a.epilogue ?? "store";
  const parts = a.weight.parts;
  const rows = parts.reduce((s, p) => s + p.rows, 0);
  const want = isGated(epilogue) ? 2 * a.n : a.n;
  if (rows !== want) {
    throw EngineError.invalidArgument(`${label}: the weight has ${rows} rows, the product ${want}`);
  }
  if (parts.length === 1) {
    return await partProduct(device, a, parts[0]!, { y: a.y, n: a.n, epilogue }, scratch, label);
  }
  const swiglu = isGated(epilogue);
  if (swiglu && a.b) throw EngineError.invalidArgument(`${label}: no bias with ${epilogue}`);
  if (swiglu && a.scale !== undefined && a.scale !== 1) {
    throw EngineError.invalidArgument(`${label}: no scale with ${epilogue}`);
  }
  // Every part prepared at once (their pipelines compile side by side), run in row order.
  const pending: Promise<KernelDispatch[]>[] = [];
  let y0 = 0;
  for (const [i, part] of a.weight.parts.entries()) {
    const placed = swiglu
      ? { y: scratch.product, ldy: 2 * a.n, y0, epilogue: "store" as const }
      : { y: a.y, ldy: a.n, y0, epilogue };
    pending.push(
      partProduct(device, a, part, { ...placed, n: part.rows }, scratch, `${label}.${i}`),
    );
    y0 += part.rows;
  }
  if (swiglu) {
    pending.push(
      prepareGatedHalves(device, {
        stacked: scratch.product,
        out: a.y,
        rows: a.m,
        width: a.n,
        act: gateActivation(epilogue),
      }, `${label}:${epilogue}`).then((d) => [d]),
    );
  }
  const out = (await Promise.all(pending)).flat();
  return out;
}

/**
 * y = x·Wᵀ (+ bias) with the RMSNorm before it and the epilogue after it, over a weight in one
 * buffer: one dispatch of the product kernels (a norm and the epilogue fused) when they take K,
 * else (float weights whose K is not a multiple of 32) the norm, `float_gemm.wgsl` and the gated
 * activation as separate dispatches through `scratch` (needed then for a norm or a gated
 * epilogue). Returns the dispatches in the order they run.
 */
export async function prepareWeightProduct(
  device: GPUDevice,
  a: ProductKernelArgs,
  scratch: LinearScratch | undefined,
  label = "product",
): Promise<KernelDispatch[]> {
  const type = a.type;
  if (!isFloatDtype(type) || productTakes(type, a.k)) {
    return [await prepareFormatProduct(device, a, label)];
  }
  return await prepareUnfusedProduct(device, { ...a, type }, scratch, label);
}

/** {@linkcode prepareWeightProduct} without norm or gated epilogue: one dispatch. */
export async function prepareLinear(
  device: GPUDevice,
  a: ProductKernelArgs,
  label = "linear",
): Promise<KernelDispatch> {
  return (await prepareWeightProduct(device, a, undefined, label))[0]!;
}

/**
 * The product kernel for `a.m` activation rows: the matrix-vector kernel up to
 * `gemmMinRows(device)` rows (decode), the tiled GEMM above.
 */
export function prepareFormatProduct(
  device: GPUDevice,
  a: ProductKernelArgs,
  label: string,
): Promise<KernelDispatch> {
  return a.m > gemmMinRows(device)
    ? prepareTiledGemm(device, a, label)
    : prepareMatvec(device, a, label);
}
