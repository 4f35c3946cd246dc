/** Float64 references for the dense kernels, reading weights as the GPU does (decoded bytes). */

/** out[t, :] = table[ids[t], :] (zeros for ids outside the table). */
export function embeddingRef(
  ids: ArrayLike<number>,
  table: ArrayLike<number>,
  hidden: number,
  scale = 1,
): Float64Array {
  const vocab = table.length / hidden;
  const out = new Float64Array(ids.length * hidden);
  for (let t = 0; t < ids.length; t++) {
    const id = ids[t]!;
    if (id >= vocab) continue;
    for (let d = 0; d < hidden; d++) out[t * hidden + d] = table[id * hidden + d]! * scale;
  }
  return out;
}

/** `x[r, :] / sqrt(mean(x[r, :]²) + eps) * w` for each row of width `dim`. */
export function rmsNormRef(
  x: ArrayLike<number>,
  w: ArrayLike<number>,
  dim: number,
  eps: number,
): Float64Array {
  const rows = x.length / dim;
  const out = new Float64Array(x.length);
  for (let r = 0; r < rows; r++) {
    let ss = 0;
    for (let d = 0; d < dim; d++) ss += x[r * dim + d]! ** 2;
    const scale = 1 / Math.sqrt(ss / dim + eps);
    for (let d = 0; d < dim; d++) out[r * dim + d] = x[r * dim + d]! * scale * w[d]!;
  }
  return out;
}

/**
 * `x` with a per-head RMSNorm applied to `heads` heads of `headDim` per token, token t's first
 * head at `offset + t·stride` (the rest of `x` as it was).
 */
export function headNormRef(
  x: ArrayLike<number>,
  w: ArrayLike<number>,
  s: { tokens: number; heads: number; headDim: number; stride: number; offset: number },
  eps: number,
): Float64Array {
  const out = Float64Array.from(x);
  for (let t = 0; t < s.tokens; t++) {
    for (let h = 0; h < s.heads; h++) {
      const o = s.offset + t * s.stride + h * s.headDim;
      const row = rmsNormRef(out.subarray(o, o + s.headDim), w, s.headDim, eps);
      out.set(row, o);
    }
  }
  return out;
}

/** y[m, n] = sum_k x[m, k] W[n, k] + b[n], W in [N, K] layout. */
export function linearRef(
  x: ArrayLike<number>,
  w: ArrayLike<number>,
  b: ArrayLike<number> | undefined,
  m: number,
  n: number,
  k: number,
): Float64Array {
  const y = new Float64Array(m * n);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let acc = b ? b[j]! : 0;
      for (let kk = 0; kk < k; kk++) acc += x[i * k + kk]! * w[j * k + kk]!;
      y[i * n + j] = acc;
    }
  }
  return y;
}

/**
 * Rotate-half RoPE on x [T, heads, headDim] (returns a new array), on the first `rotaryDim`
 * elements of each head (default all; the rest are copied), the rotated ones times `scale`.
 */
export function ropeRef(
  x: ArrayLike<number>,
  positions: ArrayLike<number>,
  invFreq: ArrayLike<number>,
  heads: number,
  headDim: number,
  rotaryDim = headDim,
  scale = 1,
): Float64Array {
  const out = Float64Array.from(x);
  const half = rotaryDim / 2;
  for (let t = 0; t < positions.length; t++) {
    for (let h = 0; h < heads; h++) {
      const base = (t * heads + h) * headDim;
      for (let i = 0; i < half; i++) {
        const a = positions[t]! * invFreq[i]!;
        const x1 = x[base + i]!, x2 = x[base + i + half]!;
        out[base + i] = (x1 * Math.cos(a) - x2 * Math.sin(a)) * scale;
        out[base + i + half] = (x2 * Math.cos(a) + x1 * Math.sin(a)) * scale;
      }
    }
  }
  return out;
}

/** `silu(gate[i]) * up[i]`, where `silu(g) = g / (1 + e^-g)`. */
export function swiGluRef(gate: ArrayLike<number>, up: ArrayLike<number>): Float64Array {
  return gatedRef(gate, up, "silu");
}

/** GELU with the tanh approximation: `g/2 · (1 + tanh(√(2/π)·(g + 0.044715·g³)))`. */
export function geluTanhRef(g: number): number {
  return 0.5 * g * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (g + 0.044715 * g * g * g)));
}

/** `act(gate[i]) * up[i]`: SwiGLU (`silu`) or GeGLU (`gelu_tanh`). */
export function gatedRef(
  gate: ArrayLike<number>,
  up: ArrayLike<number>,
  act: "silu" | "gelu_tanh",
): Float64Array {
  return Float64Array.from({ length: gate.length }, (_, i) => {
    const g = gate[i]!;
    return (act === "silu" ? g / (1 + Math.exp(-g)) : geluTanhRef(g)) * up[i]!;
  });
}

/**
 * The fused product of `linear.ts`: y = (rmsnorm(x)·Wᵀ + b)·scale, then stored, added to `y0`, or
 * (with W = [gate; up] of 2n rows) y = act(gate) * up, SiLU (`swiglu`) or GELU-tanh (`geglu`).
 */
export function fusedLinearRef(
  x: ArrayLike<number>,
  w: ArrayLike<number>,
  b: ArrayLike<number> | undefined,
  m: number,
  n: number,
  k: number,
  opts: {
    norm?: { weight: ArrayLike<number>; eps: number };
    epilogue?: "store" | "accumulate" | "swiglu" | "geglu";
    y0?: ArrayLike<number>;
    /** The product (bias included) times this before it is stored or added. */
    scale?: number;
  } = {},
): Float64Array {
  const xn = opts.norm ? rmsNormRef(x, opts.norm.weight, k, opts.norm.eps) : x;
  if (opts.epilogue === "swiglu" || opts.epilogue === "geglu") {
    const act = opts.epilogue === "swiglu" ? "silu" : "gelu_tanh";
    const r = linearRef(xn, w, b, m, 2 * n, k);
    const y = new Float64Array(m * n);
    for (let i = 0; i < m; i++) {
      const row = r.subarray(i * 2 * n, (i + 1) * 2 * n);
      y.set(gatedRef(row.subarray(0, n), row.subarray(n), act), i * n);
    }
    return y;
  }
  const y = linearRef(xn, w, b, m, n, k);
  if (opts.scale !== undefined) { for (let i = 0; i < y.length; i++) y[i] = y[i]! * opts.scale; }
  if (opts.epilogue === "accumulate") {
    for (let i = 0; i < y.length; i++) y[i] = y[i]! + (opts.y0?.[i] ?? 0);
  }
  return y;
}
