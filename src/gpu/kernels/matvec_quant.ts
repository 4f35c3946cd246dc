/**
 * Products over weights in any product format (`shaders/matvec_quant.wgsl`, composed per format
 * with the format's decoder `shaders/quant/<fragment>.wgsl`; `../quant/product_formats.ts`): the
 * GGUF block-quantized formats, dequantized in registers from the blocks exactly as a GGUF file
 * stores them (no dequantized copy is ever made), and F32, F16 and BF16, read 32 elements at a
 * time through the same contract.
 *
 * - `prepareQuantMatvec`: the decode product with RMSNorm before it and the residual add or
 *   SwiGLU after it folded in, writing into a column window of a wider output.
 * - `prepareQuantEmbedding`: the token embedding gather from one chunk of a quantized table.
 */
import { EngineError } from "../../contract/errors.ts";
import { storageBuffer } from "../buffers.ts";
import { grid } from "../dispatch.ts";
import { kernelPaths } from "../paths.ts";
import type { QuantFormat } from "../quant/format.ts";
import { quantFormat, quantizedRowBytes, type QuantType } from "../quant/formats.ts";
import { productFormat, productRowBytes } from "../quant/product_formats.ts";
import type { TensorDtype } from "../dtype.ts";
import { quantTableBuffer } from "../quant/tables.ts";
import { shaderVariant } from "../shader_compose.ts";
import { type KernelDispatch, prepareKernel } from "./kernel.ts";

export type QuantEpilogue = "store" | "accumulate" | "swiglu" | "geglu";

/** The gated epilogues' activations, as `lib/gate_act.wgsl`'s override ACT numbers them. */
const GATE_ACT: Partial<Record<QuantEpilogue, number>> = { swiglu: 0, geglu: 1 };

/** Whether `e` is a gated epilogue (W = [gate; up] stacked, y = act(r_gate)·r_up). */
export function isGated(e: QuantEpilogue): boolean {
  return GATE_ACT[e] !== undefined;
}

/** The override constants of epilogue `e`: GATED, and ACT (0 SiLU, 1 GELU-tanh). */
export function epilogueConstants(e: QuantEpilogue): { GATED: number; ACT: number } {
  return { GATED: isGated(e) ? 1 : 0, ACT: GATE_ACT[e] ?? 0 };
}

export interface QuantMatvecArgs {
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
  epilogue?: QuantEpilogue;
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

/** Activation rows per z-slice of workgroups; more rows take more z-slices. */
export const QUANT_MATVEC_ROWS = 8;
/**
 * Output rows per thread on the one-thread-per-row path: one load of x serves this many weight
 * rows. On lavapipe the loads of x cost as much as the weights': at 8 activation rows, one row
 * per thread is 8× slower than 8 (Q8_0, 1536 × 576: 88 ms against 11 ms).
 */
const CPU_RPT = 8;
/** Bits of the shader's `flags` uniform. */
export const FLAG_BIAS = 1, FLAG_NORM = 2, FLAG_ACCUMULATE = 4;
export const EPILOGUES: readonly QuantEpilogue[] = ["store", "accumulate", "swiglu", "geglu"];

const placeholders = new WeakMap<GPUDevice, GPUBuffer>();

/** The shader declares every optional binding (bias, norm weight); unused ones read this. */
export function placeholder(device: GPUDevice): GPUBuffer {
  let b = placeholders.get(device);
  if (b === undefined) {
    placeholders.set(device, b = storageBuffer(device, "matvec_quant:unused", 16, "other"));
  }
  return b;
}

/** The shader variant of `matvec_quant.wgsl` for format `f`. */
const variant = (f: QuantFormat) => shaderVariant("matvec_quant", { format: f.fragment });

/** Binding 7: the format's lookup table, for the formats that have one. */
export async function tableBinding(
  device: GPUDevice,
  f: QuantFormat,
): Promise<Record<number, GPUBuffer>> {
  return f.table ? { 7: await quantTableBuffer(device, f.table) } : {};
}

export function fail(what: string, message: string): never {
  throw EngineError.invalidArgument(`${what}: ${message}`);
}

export function checkCount(what: string, name: string, v: number, min: number): void {
  if (!Number.isInteger(v) || v < min) {
    fail(what, `${name} must be an integer >= ${min}, got ${v}`);
  }
}

export function checkBuffer(
  device: GPUDevice,
  what: string,
  name: string,
  b: GPUBuffer,
  bytes: number,
): void {
  if (b.size < bytes) fail(what, `${name} holds ${b.size} bytes, needs ${bytes}`);
  if (bytes > device.limits.maxStorageBufferBindingSize) {
    fail(
      what,
      `${name} needs ${bytes} bytes, over this device's binding limit of ${device.limits.maxStorageBufferBindingSize}`,
    );
  }
}

/** Threads per row, workgroup size and rows per thread. */
function threads(device: GPUDevice, tpr?: number): { tpr: number; wg: number; rpt: number } {
  if (tpr !== undefined) {
    if (!(Number.isInteger(tpr) && tpr >= 1 && tpr <= 64 && (tpr & (tpr - 1)) === 0)) {
      fail("matvec_quant", `threadsPerRow ${tpr} is not a power of two in 1..64`);
    }
  } else {
    tpr = kernelPaths(device).matvecThreadsPerRow;
  }
  const rpt = tpr === 1 ? CPU_RPT : 1;
  return { tpr, wg: tpr === 1 ? 64 : 256, rpt };
}

/** The bindings of a quantized product (both kernels): x, weights, bias, y, norm weight, table. */
export async function productBindings(
  device: GPUDevice,
  a: QuantMatvecArgs,
  f: QuantFormat,
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

/** A quantized product's arguments, checked, with its defaults and its uniform flags. */
export interface CheckedQuantProduct {
  f: QuantFormat;
  y0: number;
  ldy: number;
  epilogue: QuantEpilogue;
  /** Bits of `FLAG_BIAS`, `FLAG_NORM`, `FLAG_ACCUMULATE`. */
  flags: number;
  /** The epilogue's scale (1 by default). */
  scale: number;
}

/**
 * Check the shape, output window, epilogue, norm and buffer sizes of a quantized product (the
 * decode matvec and the prefill GEMM take the same arguments); `what` names it in the errors.
 */
export function checkQuantProduct(
  device: GPUDevice,
  what: string,
  a: QuantMatvecArgs,
): CheckedQuantProduct {
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

/**
 * r[i, j] = s_i·Σₖ x[i, k]·g[k]·W[j, k] + bias[y0 + j], with s_i = 1/√(mean_k x[i, k]² + eps)
 * and g the norm weight when `norm` is given (else s = g = 1), stored to y[i·ldy + y0 + j]
 * (`store`), added to it (`accumulate`), or with W = [gate; up] as y = silu(r_gate)·r_up
 * (`swiglu`). Built for decode (m ≤ 8, one pass over the weights); a larger m is taken 8 rows at a
 * time in z-slices that each decode the weights again: correct, but a prefill fallback, not a
 * tiled matmul. `k` must be a multiple of the block size (32, or 256 for the K-quants).
 */
export async function prepareQuantMatvec(
  device: GPUDevice,
  a: QuantMatvecArgs,
  label = "matvec_quant",
): Promise<KernelDispatch> {
  const what = "matvec_quant";
  const { f, y0, ldy, epilogue, flags, scale } = checkQuantProduct(device, what, a);
  const slices = Math.ceil(a.m / QUANT_MATVEC_ROWS);
  if (slices > device.limits.maxComputeWorkgroupsPerDimension) {
    fail(what, `m = ${a.m} is too many rows for one dispatch`);
  }
  const { tpr, wg, rpt } = threads(device, a.threadsPerRow);
  const [gx, gy] = grid(device, Math.ceil(a.n / ((wg / tpr) * rpt)));
  return await prepareKernel(device, {
    label,
    shader: variant(f),
    entry: "main",
    constants: {
      ROWS: Math.min(a.m, QUANT_MATVEC_ROWS),
      ...epilogueConstants(epilogue),
      TPR: tpr,
      WG: wg,
      RPT: rpt,
    },
    uniform: [a.m, a.n, a.k, a.norm?.eps ?? 0, ldy, y0, 0, 0, 0, flags, scale, 0],
    floats: [3, 10],
    buffers: await productBindings(device, a, f),
    workgroups: [gx, gy, slices],
  });
}

export interface QuantEmbeddingArgs {
  /** Token ids, u32 [tokens]. */
  ids: GPUBuffer;
  /** Rows [rowStart, rowEnd) of the [vocab, hidden] table, GGUF bytes. */
  table: GPUBuffer;
  /** Output, f32 [tokens, hidden]. */
  out: GPUBuffer;
  tokens: number;
  hidden: number;
  type: QuantType;
  rowStart: number;
  rowEnd: number;
  vocab: number;
  /** Every embedding value times this (default 1). */
  scale?: number;
}

/** Threads per workgroup of the `embed` entry point (its `EMBED_WG`). */
const EMBED_WG = 64;

/**
 * Token embedding gather from one chunk of a quantized table (a big table is split into chunks,
 * one buffer and one dispatch each). For token t with id = ids[t]: out[t, :] = the dequantized
 * row id when rowStart ≤ id < rowEnd; zeros when id ≥ vocab and this is the last chunk (rowEnd
 * = vocab); otherwise out[t, :] is left as it is, for another chunk to write. `hidden` must be a
 * multiple of the block size.
 */
export async function prepareQuantEmbedding(
  device: GPUDevice,
  a: QuantEmbeddingArgs,
  label = "embedding_quant",
): Promise<KernelDispatch> {
  const what = "embedding_quant";
  const f = quantFormat(a.type);
  checkCount(what, "tokens", a.tokens, 1);
  checkCount(what, "hidden", a.hidden, 1);
  checkCount(what, "vocab", a.vocab, 1);
  checkCount(what, "rowStart", a.rowStart, 0);
  checkCount(what, "rowEnd", a.rowEnd, 1);
  if (!(a.rowStart < a.rowEnd && a.rowEnd <= a.vocab)) {
    fail(what, `rows [${a.rowStart}, ${a.rowEnd}) are not a non-empty range within ${a.vocab}`);
  }
  const rowBytes = quantizedRowBytes(f.type, a.hidden);
  checkBuffer(device, what, "ids", a.ids, a.tokens * 4);
  checkBuffer(device, what, "table", a.table, (a.rowEnd - a.rowStart) * rowBytes);
  checkBuffer(device, what, "out", a.out, a.tokens * a.hidden * 4);
  const threadCount = a.tokens * (a.hidden / 32);
  return await prepareKernel(device, {
    label,
    shader: variant(f),
    entry: "embed",
    uniform: [a.tokens, 0, a.hidden, 0, 0, 0, a.rowStart, a.rowEnd, a.vocab, 0, a.scale ?? 1, 0],
    floats: [10],
    buffers: { 2: a.table, 4: a.out, 6: a.ids, ...await tableBinding(device, f) },
    workgroups: grid(device, Math.ceil(threadCount / EMBED_WG)),
  });
}
