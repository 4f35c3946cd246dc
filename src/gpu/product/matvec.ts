/**
 * The matrix-vector product kernel over weights in any format (`shaders/product/matvec.wgsl`,
 * composed per format with the format's decoder `shaders/formats/<fragment>.wgsl`): the GGUF
 * block-quantized formats, dequantized in registers from the blocks exactly as a GGUF file stores
 * them (no dequantized copy is ever made), and F32, F16 and BF16, read 32 elements at a time
 * through the same contract (`../formats/format.ts`).
 *
 * - `prepareMatvec`: the decode product with RMSNorm before it and the residual add or SwiGLU
 *   after it folded in, writing into a column window of a wider output.
 * - `prepareQuantEmbedding`: the token embedding gather from one chunk of a quantized table.
 */
import { grid } from "../dispatch.ts";
import { kernelPaths } from "../paths.ts";
import type { WeightFormat } from "../formats/format.ts";
import { quantFormat, quantizedRowBytes, type QuantType } from "../formats/registry.ts";
import { shaderVariant } from "../shader_compose.ts";
import {
  checkBuffer,
  checkCount,
  fail,
  type KernelDispatch,
  prepareKernel,
  tableBinding,
} from "../kernels/kernel.ts";
import {
  checkProduct,
  epilogueConstants,
  PRODUCT_UNIFORM_FLOATS,
  productBindings,
  type ProductKernelArgs,
  productUniform,
} from "./args.ts";

/** Activation rows per z-slice of workgroups; more rows take more z-slices. */
export const MATVEC_ROWS = 8;
/**
 * Output rows per thread on the one-thread-per-row path: one load of x serves this many weight
 * rows. On lavapipe the loads of x cost as much as the weights': at 8 activation rows, one row
 * per thread is 8× slower than 8 (Q8_0, 1536 × 576: 88 ms against 11 ms).
 */
const CPU_RPT = 8;

/** The shader variant of `product/matvec.wgsl` for format `f`. */
const variant = (f: WeightFormat) => shaderVariant("product/matvec", { format: f.fragment });

/** Threads per row, workgroup size and rows per thread. */
function threads(device: GPUDevice, tpr?: number): { tpr: number; wg: number; rpt: number } {
  if (tpr !== undefined) {
    if (!(Number.isInteger(tpr) && tpr >= 1 && tpr <= 64 && (tpr & (tpr - 1)) === 0)) {
      fail("matvec", `threadsPerRow ${tpr} is not a power of two in 1..64`);
    }
  } else {
    tpr = kernelPaths(device).matvecThreadsPerRow;
  }
  const rpt = tpr === 1 ? CPU_RPT : 1;
  return { tpr, wg: tpr === 1 ? 64 : 256, rpt };
}

/**
 * r[i, j] = s_i·Σₖ x[i, k]·g[k]·W[j, k] + bias[y0 + j], with s_i = 1/√(mean_k x[i, k]² + eps)
 * and g the norm weight when `norm` is given (else s = g = 1), stored to y[i·ldy + y0 + j]
 * (`store`), added to it (`accumulate`), or with W = [gate; up] as y = silu(r_gate)·r_up
 * (`swiglu`). Built for decode (m ≤ 8, one pass over the weights); a larger m is taken 8 rows at a
 * time in z-slices that each decode the weights again: correct, but a prefill fallback, not a
 * tiled matmul. `k` must be a multiple of the block size (32, or 256 for the K-quants).
 */
export async function prepareMatvec(
  device: GPUDevice,
  a: ProductKernelArgs,
  label = "matvec",
): Promise<KernelDispatch> {
  const what = "matvec";
  const { f, y0, ldy, epilogue, flags, scale } = checkProduct(device, what, a);
  const slices = Math.ceil(a.m / MATVEC_ROWS);
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
      ROWS: Math.min(a.m, MATVEC_ROWS),
      ...epilogueConstants(epilogue),
      TPR: tpr,
      WG: wg,
      RPT: rpt,
    },
    uniform: productUniform(a, { ldy, y0, flags, scale }),
    floats: PRODUCT_UNIFORM_FLOATS,
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
