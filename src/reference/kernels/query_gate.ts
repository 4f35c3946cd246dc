/**
 * Float64 references for `shaders/query_gate.wgsl`: the split of a gated query projection into
 * query and gate, and the sigmoid output gate, written from the formulas.
 */

/** Shape of {@linkcode querySplitRef}'s rows. */
export interface QuerySplitShape {
  /** Tokens (rows). */
  tokens: number;
  /** Query heads. */
  heads: number;
  /** Key/value heads. */
  kvHeads: number;
  /** Values per head. */
  headDim: number;
}

/**
 * Rows [q|gate per head (2Q) | k (KV) | v (KV)] → qkv rows [q (Q) | k | v] and gate rows [Q],
 * Q = heads·headDim, KV = kvHeads·headDim.
 */
export function querySplitRef(
  input: ArrayLike<number>,
  s: QuerySplitShape,
): { qkv: Float64Array; gate: Float64Array } {
  const d = s.headDim, q = s.heads * d, kv = s.kvHeads * d;
  const inW = 2 * q + 2 * kv, outW = q + 2 * kv;
  const qkv = new Float64Array(s.tokens * outW);
  const gate = new Float64Array(s.tokens * q);
  for (let t = 0; t < s.tokens; t++) {
    const row = t * inW;
    for (let h = 0; h < s.heads; h++) {
      for (let j = 0; j < d; j++) {
        qkv[t * outW + h * d + j] = input[row + 2 * h * d + j]!;
        gate[t * q + h * d + j] = input[row + 2 * h * d + d + j]!;
      }
    }
    for (let c = 0; c < 2 * kv; c++) qkv[t * outW + q + c] = input[row + 2 * q + c]!;
  }
  return { qkv, gate };
}

/** attn[i] · sigmoid(gate[i]) elementwise, sigmoid(g) = 1 / (1 + e^-g). */
export function sigmoidGateRef(attn: ArrayLike<number>, gate: ArrayLike<number>): Float64Array {
  return Float64Array.from({ length: attn.length }, (_, i) => attn[i]! / (1 + Math.exp(-gate[i]!)));
}
