/** Float64 references of causal attention over a paged KV cache and of RoPE + KV write. */
import { f16ToNumber, numberToF16 } from "../../gpu/dtype.ts";
import { ropeRef } from "./dense.ts";

/** A paged KV cache as plain arrays, with one sequence's block table. */
export interface PagedKv {
  /** [blocks, blockSize, kvHeads, headDim] */
  k: ArrayLike<number>;
  /** Values, same layout as `k`. */
  v: ArrayLike<number>;
  /** Tokens per block. */
  blockSize: number;
  /** Key/value heads. */
  kvHeads: number;
  /** Width of a head. */
  headDim: number;
  /** Block ids of the step's sequences, concatenated (indexed through `tableOffsets`). */
  blockTable: ArrayLike<number>;
}

/** Attention's options beyond plain causal attention (as `AttentionArgs` has them). */
export interface AttentionKnobsRef {
  /** Query scale (default 1/sqrt(headDim)). */
  scale?: number;
  /** Keys a query sees, itself included (default 0: all). */
  window?: number;
  /** Scores become cap·tanh(s / cap) (default 0: none). */
  softcap?: number;
  /** Per query head, one more softmax logit whose column is dropped (default: none). */
  sinks?: ArrayLike<number>;
}

/**
 * out[t, h, :] = softmax_j(q[t,h]·K[j] / sqrt(d)) V[j] over keys j = 0..=positions[t] (with
 * `opts`: scaled by `scale`, soft-capped, only the last `window` keys, and with a sink
 * logit sinks[h] in the softmax's denominator), reading
 * key j of token t's sequence at block `blockTable[tableOffsets[t] + j / blockSize]`. For an f16
 * cache, pass the stored (f16-rounded) values: see {@linkcode ropeKvRef} and {@linkcode decodeKv}.
 */
export function pagedAttentionRef(
  q: ArrayLike<number>,
  kv: PagedKv,
  positions: ArrayLike<number>,
  tableOffsets: ArrayLike<number>,
  heads: number,
  opts: AttentionKnobsRef = {},
): Float64Array {
  const { headDim: hd, kvHeads, blockSize } = kv;
  const out = new Float64Array(positions.length * heads * hd);
  const scale = opts.scale ?? 1 / Math.sqrt(hd);
  const cap = opts.softcap ?? 0, window = opts.window ?? 0;
  for (let t = 0; t < positions.length; t++) {
    for (let h = 0; h < heads; h++) {
      const kvh = Math.floor(h / (heads / kvHeads));
      const qb = (t * heads + h) * hd;
      const first = window > 0 ? Math.max(0, positions[t]! + 1 - window) : 0;
      const keys = positions[t]! + 1 - first;
      const base = (i: number) => {
        const j = first + i;
        const block = kv.blockTable[tableOffsets[t]! + Math.floor(j / blockSize)]!;
        return ((block * blockSize + (j % blockSize)) * kvHeads + kvh) * hd;
      };
      const scores = new Float64Array(keys);
      let max = -Infinity;
      for (let j = 0; j < keys; j++) {
        let dot = 0;
        const kb = base(j);
        for (let d = 0; d < hd; d++) dot += q[qb + d]! * kv.k[kb + d]!;
        scores[j] = cap > 0 ? cap * Math.tanh(dot * scale / cap) : dot * scale;
        max = Math.max(max, scores[j]!);
      }
      const sink = opts.sinks?.[h];
      if (sink !== undefined) max = Math.max(max, sink);
      let sum = sink === undefined ? 0 : Math.exp(sink - max);
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

/** A value as a KV cache of `kvDtype` stores it (the GPU rounds f32 to f16 to nearest even). */
export function roundKv(x: number, kvDtype: "f16" | "f32"): number {
  return kvDtype === "f16" ? f16ToNumber(numberToF16(x)) : Math.fround(x);
}

/** The elements of a KV cache buffer's bytes: f32, or f16 packed two per u32 (low half first). */
export function decodeKv(bytes: ArrayBuffer, kvDtype: "f16" | "f32"): Float64Array {
  if (kvDtype === "f32") return Float64Array.from(new Float32Array(bytes));
  return Float64Array.from(new Uint16Array(bytes), f16ToNumber);
}

/** Head counts and cache type of {@linkcode ropeKvRef}. */
export interface RopeKvShape {
  /** Query heads per token. */
  heads: number;
  /** Key/value heads per token. */
  kvHeads: number;
  /** Width of a head. */
  headDim: number;
  /** Element type of the cache (f16 values are rounded as the GPU stores them). */
  kvDtype: "f16" | "f32";
  /** Leading elements of each head that rotate (default `headDim`; 0: no RoPE). */
  rotaryDim?: number;
  /** The rotated elements times this (default 1). */
  rotaryScale?: number;
}

/**
 * RoPE + KV write from one fused q/k/v product `qkv` ([T, (heads + 2 kvHeads) * headDim]):
 * returns rotated q ([T, heads, headDim]) and copies of `kCache`/`vCache` with token t's rotated
 * k and its v, rounded as the cache stores them, at slot `slots[t]` (0xFFFFFFFF: skipped).
 */
export function ropeKvRef(
  qkv: ArrayLike<number>,
  positions: ArrayLike<number>,
  invFreq: ArrayLike<number>,
  slots: ArrayLike<number>,
  kCache: ArrayLike<number>,
  vCache: ArrayLike<number>,
  s: RopeKvShape,
): { q: Float64Array; k: Float64Array; v: Float64Array } {
  const { heads, kvHeads, headDim: hd, kvDtype } = s;
  const tokens = positions.length;
  const qCols = heads * hd, kvCols = kvHeads * hd, row = qCols + 2 * kvCols;
  const rows = (off: number, n: number) =>
    Float64Array.from(
      { length: tokens * n },
      (_, i) => qkv[Math.floor(i / n) * row + off + i % n]!,
    );
  const rot = s.rotaryDim ?? hd;
  const f = s.rotaryScale ?? 1;
  const q = ropeRef(rows(0, qCols), positions, invFreq, heads, hd, rot, f);
  const kNew = ropeRef(rows(qCols, kvCols), positions, invFreq, kvHeads, hd, rot, f);
  const vNew = rows(qCols + kvCols, kvCols);
  const k = Float64Array.from(kCache), v = Float64Array.from(vCache);
  for (let t = 0; t < tokens; t++) {
    const slot = slots[t]!;
    if (slot === 0xffffffff) continue;
    for (let c = 0; c < kvCols; c++) {
      k[slot * kvCols + c] = roundKv(kNew[t * kvCols + c]!, kvDtype);
      v[slot * kvCols + c] = roundKv(vNew[t * kvCols + c]!, kvDtype);
    }
  }
  return { q, k, v };
}
