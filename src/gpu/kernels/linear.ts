/**
 * Float linear layers, y = x·Wᵀ (+ b) with what surrounds a product in a transformer fused in:
 * RMSNorm of x before it, and after it either the residual add (`accumulate`) or SwiGLU over
 * stacked gate and up weights (`swiglu`).
 *
 * Float weights are formats of the product kernels like the GGUF block types
 * (`../quant/product_formats.ts`): whenever K is a multiple of 32 (every model Kiln runs), the
 * product is one dispatch of `matvec_quant.wgsl` (decode) or `gemm_quant.wgsl` (prefill), with
 * the norm and the epilogue fused, through `prepareQuantProduct`. Other widths take the general
 * float GEMM (`gemm.wgsl`, any shape), which adds into y itself, with a norm pass before it and a
 * SwiGLU pass after it where asked.
 */
import { EngineError } from "../../contract/errors.ts";
import type { WeightDtype } from "../dtype.ts";
import { productTakes } from "../quant/product_formats.ts";
import { type KernelDispatch } from "./kernel.ts";
import { type GateActivation, prepareGatedHalves, prepareRmsNorm } from "./dense.ts";
import { prepareGemm } from "./gemm.ts";
import { prepareQuantProduct } from "./gemm_quant.ts";
import { isGated, type QuantEpilogue } from "./matvec_quant.ts";

/** Buffers and shape of a product `y = x·Wᵀ (+ b)`. */
export interface LinearArgs {
  /** Activations, f32 [m, k]. */
  x: GPUBuffer;
  /** Weight, `dtype` [n, k] (row-major, one output per row). */
  w: GPUBuffer;
  /** Bias, f32 [n]. */
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

/**
 * What a fused product does with its result `r`: store it, add it to y, or apply the gated
 * activation (SwiGLU or GeGLU) over stacked [gate; up] weights.
 */
export type Epilogue = QuantEpilogue;

/** A product with the RMSNorm before it and the epilogue after it fused in. */
export interface FusedLinearArgs extends LinearArgs {
  /** RMSNorm of x folded in: its weight as f32 [k], and epsilon. */
  norm?: { weight: GPUBuffer; eps: number };
  /**
   * `store` (default): y = r; `accumulate`: y += r; `swiglu` / `geglu`: y = act(r_gate) * r_up
   * with SiLU / GELU-tanh.
   */
  epilogue?: Epilogue;
  /**
   * The product (bias included) times this before it is stored or added (default 1; not with
   * a gated epilogue). Product kernels only (K a multiple of 32).
   */
  scale?: number;
  /**
   * Threads per output row of the matrix-vector kernel (a power of two up to 64). By default the
   * device's kernel paths say; tests set it to cover every variant.
   */
  threadsPerRow?: number;
  /**
   * Output row stride (default n) and column offset (default 0): row i of the result lands at
   * y[i·ldy + y0 …], and the bias is read from b[y0 …]. A product over one part of a weight
   * split by rows writes its columns of the whole output so. Product kernels only (K a multiple
   * of 32).
   */
  ldy?: number;
  /** Column offset into each output row (default 0); see `ldy`. */
  y0?: number;
}

/** y = x·Wᵀ (+ b): one dispatch, of the product kernels or (K not a multiple of 32) `gemm.wgsl`. */
export async function prepareLinear(
  device: GPUDevice,
  a: LinearArgs,
  label = "linear",
): Promise<KernelDispatch> {
  return (await prepareFusedLinear(device, a, undefined, label)).dispatches[0]!;
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
  /** One dispatch (product kernels) or up to three (norm, `gemm.wgsl`, SwiGLU). */
  dispatches: KernelDispatch[];
}

/**
 * A fused product: one dispatch when the product kernels take K, else RMSNorm, the product and
 * the epilogue as separate dispatches through `scratch` (needed then for a norm or SwiGLU).
 */
export async function prepareFusedLinear(
  device: GPUDevice,
  a: FusedLinearArgs,
  scratch: LinearScratch | undefined,
  label = "linear",
): Promise<LinearDispatches> {
  const { x, w, b, y, m, n, k, dtype } = a;
  const epilogue = a.epilogue ?? "store";
  if (productTakes(dtype, k)) {
    const d = await prepareQuantProduct(device, {
      x,
      w,
      y,
      m,
      n,
      k,
      type: dtype,
      epilogue,
      ...(b ? { bias: b } : {}),
      ...(a.norm ? { norm: a.norm } : {}),
      ...(a.ldy !== undefined ? { ldy: a.ldy } : {}),
      ...(a.y0 !== undefined ? { y0: a.y0 } : {}),
      ...(a.scale !== undefined ? { scale: a.scale } : {}),
      ...(a.threadsPerRow !== undefined ? { threadsPerRow: a.threadsPerRow } : {}),
    }, label);
    return { dispatches: [d] };
  }
  const refuse = (why: string) =>
    EngineError.invalidArgument(`${label}: ${why} needs k a multiple of 32, got ${k}`);
  if (a.ldy !== undefined || a.y0 !== undefined) throw refuse("an output window");
  if (a.scale !== undefined && a.scale !== 1) throw refuse("a scaled product");
  if ((a.norm || isGated(epilogue)) && scratch === undefined) {
    throw refuse("a norm or a gated activation without scratch");
  }
  // Prepared together (their pipelines compile side by side), run in this order.
  const parts: Promise<KernelDispatch>[] = [];
  let input = x;
  if (a.norm) {
    parts.push(
      prepareRmsNorm(device, {
        x,
        weight: a.norm.weight,
        y: scratch!.normed,
        rows: m,
        dim: k,
        eps: a.norm.eps,
        dtype: "f32",
      }, `${label}:norm`),
    );
    input = scratch!.normed;
  }
  if (!isGated(epilogue)) {
    const accumulate = epilogue === "accumulate";
    parts.push(
      prepareGemm(
        device,
        { x: input, w, ...(b ? { b } : {}), y, m, n, k, dtype, accumulate },
        label,
      ),
    );
  } else {
    if (b) throw EngineError.invalidArgument(`${label}: no bias with ${epilogue}`);
    parts.push(
      prepareGemm(device, { x: input, w, y: scratch!.product, m, n: 2 * n, k, dtype }, label),
    );
    parts.push(
      prepareGatedHalves(
        device,
        { stacked: scratch!.product, out: y, rows: m, width: n, act: gateActivation(epilogue) },
        `${label}:${epilogue}`,
      ),
    );
  }
  return { dispatches: await Promise.all(parts) };
}

/** The activation of a gated epilogue. */
export function gateActivation(e: Epilogue): GateActivation {
  return e === "geglu" ? "gelu_tanh" : "silu";
}
