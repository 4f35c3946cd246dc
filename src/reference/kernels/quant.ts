/**
 * Float64 references for the quantized kernels (`../product/matvec.ts`): the weights as
 * ggml decodes them, then the float math of the fused product and of the embedding gather.
 */
import { fusedLinearRef } from "./dense.ts";
import { dequantize, quantizedRowBytes, type QuantType } from "../../gpu/formats/registry.ts";

export interface QuantMatvecRefOptions {
  /** Bias for output column j at bias[y0 + j]. */
  bias?: ArrayLike<number>;
  norm?: { weight: ArrayLike<number>; eps: number };
  epilogue?: "store" | "accumulate" | "swiglu" | "geglu";
  /** Output row stride (default n) and first column (default 0). */
  ldy?: number;
  y0?: number;
  /** What the output held before ([m, ldy]; default zeros): kept outside the window, added to by `accumulate`. */
  prior?: ArrayLike<number>;
  /** The product (bias included) times this before it is stored or added. */
  scale?: number;
}

/**
 * The output [m, ldy] of `prepareMatvec`: columns [y0, y0 + n) of each row set to r (or r
 * added to them, or silu(r_gate)·r_up), r = rmsnorm(x)·Wᵀ + bias[y0 + j], W the [n (2n with
 * swiglu), k] matrix that `bytes` decodes to; every other element as in `prior`.
 */
export function quantMatvecRef(
  type: QuantType,
  bytes: Uint8Array,
  x: ArrayLike<number>,
  m: number,
  n: number,
  k: number,
  opts: QuantMatvecRefOptions = {},
): Float64Array {
  const ldy = opts.ldy ?? n;
  const y0 = opts.y0 ?? 0;
  const epilogue = opts.epilogue ?? "store";
  const rows = epilogue === "swiglu" || epilogue === "geglu" ? 2 * n : n;
  const w = dequantize(type, bytes.subarray(0, rows * quantizedRowBytes(type, k)), rows * k);
  const bias = opts.bias ? Float64Array.from(opts.bias).subarray(y0, y0 + n) : undefined;
  const out = opts.prior ? Float64Array.from(opts.prior) : new Float64Array(m * ldy);
  const window = new Float64Array(m * n);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) window[i * n + j] = out[i * ldy + y0 + j]!;
  }
  const r = fusedLinearRef(x, w, bias, m, n, k, {
    ...(opts.norm ? { norm: opts.norm } : {}),
    ...(opts.scale !== undefined ? { scale: opts.scale } : {}),
    epilogue,
    y0: window,
  });
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) out[i * ldy + y0 + j] = r[i * n + j]!;
  }
  return out;
}

/**
 * The output [tokens, hidden] of `prepareQuantEmbedding` for one table chunk (rows [rowStart,
 * rowEnd) of [vocab, hidden], `bytes` holding just those rows): row t is the dequantized row
 * ids[t] when the chunk holds it, zeros for an id ≥ vocab in the last chunk, else as in `prior`.
 */
export function quantEmbeddingRef(
  type: QuantType,
  bytes: Uint8Array,
  ids: ArrayLike<number>,
  hidden: number,
  rowStart: number,
  rowEnd: number,
  vocab: number,
  prior?: ArrayLike<number>,
): Float64Array {
  const out = prior ? Float64Array.from(prior) : new Float64Array(ids.length * hidden);
  const rowBytes = quantizedRowBytes(type, hidden);
  for (let t = 0; t < ids.length; t++) {
    const id = ids[t]!;
    if (id >= rowStart && id < rowEnd) {
      const at = (id - rowStart) * rowBytes;
      out.set(dequantize(type, bytes.subarray(at, at + rowBytes), hidden), t * hidden);
    } else if (id >= vocab && rowEnd === vocab) {
      out.fill(0, t * hidden, (t + 1) * hidden);
    }
  }
  return out;
}
