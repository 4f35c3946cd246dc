/** Float64 reference of causal attention over a paged KV cache. */

export interface PagedKv {
  /** [blocks, blockSize, kvHeads, headDim] */
  k: ArrayLike<number>;
  v: ArrayLike<number>;
  blockSize: number;
  kvHeads: number;
  headDim: number;
  blockTable: ArrayLike<number>;
}

/**
 * out[t, h, :] = softmax_j(q[t,h]·K[j] / sqrt(d)) V[j] over keys j = 0..=positions[t], reading
 * key j of token t's sequence at block `blockTable[tableOffsets[t] + j / blockSize]`.
 */
export function pagedAttentionRef(
  q: ArrayLike<number>,
  kv: PagedKv,
  positions: ArrayLike<number>,
  tableOffsets: ArrayLike<number>,
  heads: number,
): Float64Array {
  const { headDim: hd, kvHeads, blockSize } = kv;
  const out = new Float64Array(positions.length * heads * hd);
  const scale = 1 / Math.sqrt(hd);
  for (let t = 0; t < positions.length; t++) {
    for (let h = 0; h < heads; h++) {
      const kvh = Math.floor(h / (heads / kvHeads));
      const qb = (t * heads + h) * hd;
      const keys = positions[t]! + 1;
      const base = (j: number) => {
        const block = kv.blockTable[tableOffsets[t]! + Math.floor(j / blockSize)]!;
        return ((block * blockSize + (j % blockSize)) * kvHeads + kvh) * hd;
      };
      const scores = new Float64Array(keys);
      let max = -Infinity;
      for (let j = 0; j < keys; j++) {
        let dot = 0;
        const kb = base(j);
        for (let d = 0; d < hd; d++) dot += q[qb + d]! * kv.k[kb + d]!;
        scores[j] = dot * scale;
        max = Math.max(max, scores[j]!);
      }
      let sum = 0;
      for (let j = 0; j < keys; j++) sum += scores[j] = Math.exp(scores[j]! - max);
      for (let j = 0; j < keys; j++) {
        const vb = base(j);
        for (let d = 0; d < hd; d++) {
          out[qb + d] = out[qb + d]! + (scores[j]! / sum) * kv.v[vb + d]!;
        }
      }
    }
  }
  return out;
}
