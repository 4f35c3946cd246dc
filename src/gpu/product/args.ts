/**
 * What both product kernels (`matvec.ts`, `gemm.ts`) take and check: the one {@linkcode Epilogue}
 * type, the kernels' arguments, their checks with the defaults filled in, and their bindings.
 */
import type { TensorDtype } from "../dtype.ts";
import type { WeightFormat } from "../formats/format.ts";
import { productFormat, productRowBytes } from "../formats/registry.ts";
import { checkBuffer, checkCount, fail, placeholder, tableBinding } from "../kernels/kernel.ts";
import type { GateActivation } from "../kernels/dense.ts";

/**
 * What a product does with its result `r`: store it, add it to y, or apply the gated activation
 * (SwiGLU or GeGLU) over stacked [gate; up] weights.
 */
export type Epilogue = "store" | "accumulate" | "swiglu" | "geglu";

/** The gated epilogues' activations, as `lib/gate_act.wgsl`'s override ACT numbers them. */
const GATE_ACT: Partial<Record<Epilogue, number>> = { swiglu: 0, geglu: 1 };

/** Whether `e` is a gated epilogue (W = [gate; up] stacked, y = act(r_gate)·r_up). */
export function isGated(e: Epilogue): boolean {
  return GATE_ACT[e] !== undefined;
}

/** The override constants of epilogue `e`: GATED, and ACT (0 SiLU, 1 GELU-tanh). */
export function epilogueConstants(e: Epilogue): { GATED: number; ACT: number } {
  return { GATED: isGated(e) ? 1 : 0, ACT: GATE_ACT[e] ?? 0 };
}

/** The activation of a gated epilogue. */
export function gateActivation(e: Epilogue): GateActivation {
  return e === "geglu" ? "gelu_tanh" : "silu";
}

/** The arguments of one product kernel dispatch (`prepareMatvec`, `prepareTiledGemm`). */
export interface ProductKernelArgs {
  /** Activations, f32 [m, k]. */
  x: GPUBuffer;
  /** Weights: n rows (2n gated: [gate; up] stacked) of k / blockSize blocks, GGUF bytes. */
  w: GPUBuffer;
  /** Output, f32 rows of stride `ldy`; the product goes to columns [y0, y0 + n). */
  y: GPUBuffer;
  m: number;
  n: number;
  k: number;
  /** The weights' format: a GGUF block type or a float dtype. */
  type: TensorDtype;
  /** f32; output column j adds bias[y0 + j]. Not with a gated epilogue (`swiglu`, `geglu`). */
  bias?: GPUBuffer;
  /** RMSNorm of x folded in: its weight gamma as f32 [k], and epsilon. */
  norm?: { weight: GPUBuffer; eps: number };
  /**
   * `store` (default): y = r; `accumulate`: y += r; `swiglu`: y = silu(r_gate) * r_up; `geglu`:
   * y = gelu_tanh(r_gate) * r_up.
   */
  epilogue?: Epilogue;
  /**
   * r (bias included) times this before it is stored or added (default 1): a scaled residual
   * branch, or logits divided by a constant. Not with a gated epilogue.
   */
  scale?: number;
  /** Output row stride in floats; default n, at least y0 + n. */
  ldy?: number;
  /** First output column; default 0. */
  y0?: number;
  /**
   * Threads per output row (a power of two up to 64). By default the device's kernel paths say:
   * 1 on `cpu` (each thread owns whole rows: no reduction, no barrier), 32 on `gpu`; tests set
   * it to cover every variant.
   */
  threadsPerRow?: number;
}

/** Bits of the shader's `flags` uniform. */
export const FLAG_BIAS = 1, FLAG_NORM = 2, FLAG_ACCUMULATE = 4;
export const EPILOGUES: readonly Epilogue[] = ["store", "accumulate", "swiglu", "geglu"];

/** The bindings of a product (both kernels): x, weights, bias, y, norm weight, table. */
export async function productBindings(
  device: GPUDevice,
  a: ProductKernelArgs,
  f: WeightFormat,
): Promise<Record<number, GPUBuffer>> {
  return {
    1: a.x,
    2: a.w,
    3: a.bias ?? placeholder(device),
    4: a.y,
    5: a.norm?.weight ?? placeholder(device),
    ...await tableBinding(device, f),
  };
}

/**
 * The uniform words of a product (`shaders/product/params.wgsl`'s `Params`, both kernels' `main`):
 * m, n, k, eps, ldy, y0, three words of the embedding entry's (0 here), flags, scale, padding.
 */
export function productUniform(
  a: ProductKernelArgs,
  c: Pick<CheckedProduct, "ldy" | "y0" | "flags" | "scale">,
): number[] {
  return [a.m, a.n, a.k, a.norm?.eps ?? 0, c.ldy, c.y0, 0, 0, 0, c.flags, c.scale, 0];
}

/** Which words of {@linkcode productUniform} are f32: eps and scale. */
export const PRODUCT_UNIFORM_FLOATS: readonly number[] = [3, 10];

/** A product's arguments, checked, with its defaults and its uniform flags. */
export interface CheckedProduct {
  f: WeightFormat;
  y0: number;
  ldy: number;
  epilogue: Epilogue;
  /** Bits of `FLAG_BIAS`, `FLAG_NORM`, `FLAG_ACCUMULATE`. */
  flags: number;
  /** The epilogue's scale (1 by default). */
  scale: number;
}

/**
 * Check the shape, output window, epilogue, norm and buffer sizes of a product (the
 * decode matvec and the prefill GEMM take the same arguments); `what` names it in the errors.
 */
export function checkProduct(
  device: GPUDevice,
  what: string,
  a: ProductKernelArgs,
): CheckedProduct {
  const f = productFormat(a.type);
  checkCount(what, "m", a.m, 1);
  checkCount(what, "n", a.n, 1);
  checkCount(what, "k", a.k, 1);
  const rowBytes = productRowBytes(f, a.k);
  const y0 = a.y0 ?? 0;
  const ldy = a.ldy ?? a.n;
  checkCount(what, "y0", y0, 0);
  checkCount(what, "ldy", ldy, 1);
  if (ldy < y0 + a.n) fail(what, `ldy ${ldy} is less than y0 + n = ${y0 + a.n}`);
  const epilogue = a.epilogue ?? "store";
  if (!EPILOGUES.includes(epilogue)) fail(what, `unknown epilogue ${epilogue}`);
  if (isGated(epilogue) && a.bias) fail(what, `no bias with the ${epilogue} epilogue`);
  const scale = a.scale ?? 1;
  if (!Number.isFinite(scale)) fail(what, `scale must be finite, got ${scale}`);
  if (isGated(epilogue) && scale !== 1) fail(what, `no scale with the ${epilogue} epilogue`);
  if (a.norm && !(Number.isFinite(a.norm.eps) && a.norm.eps >= 0)) {
    fail(what, `norm eps must be finite and >= 0, got ${a.norm.eps}`);
  }
  const wRows = isGated(epilogue) ? 2 * a.n : a.n;
  checkBuffer(device, what, "x", a.x, a.m * a.k * 4);
  checkBuffer(device, what, "w", a.w, wRows * rowBytes);
  checkBuffer(device, what, "y", a.y, ((a.m - 1) * ldy + y0 + a.n) * 4);
  if (a.bias) checkBuffer(device, what, "bias", a.bias, (y0 + a.n) * 4);
  if (a.norm) checkBuffer(device, what, "norm weight", a.norm.weight, a.k * 4);
  const flags = (a.bias ? FLAG_BIAS : 0) | (a.norm ? FLAG_NORM : 0) |
    (epilogue === "accumulate" ? FLAG_ACCUMULATE : 0);
  return { f, y0, ldy, epilogue, flags, scale };
}

/** Scratch the unfused path needs: f32 buffers of at least m·k (normed x) and m·2n (SwiGLU). */
export interface LinearScratch {
  /** f32, at least m·k: the normed activations. */
  normed: GPUBuffer;
  /** f32, at least m·2n: the gate/up product before SwiGLU. */
  product: GPUBuffer;
}
