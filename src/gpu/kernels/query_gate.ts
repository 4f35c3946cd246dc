/**
 * Wrappers for `shaders/query_gate.wgsl`, gated attention as in Qwen3.5's full-attention layers
 * (llama.cpp's `build_layer_attn` for qwen35): the query projection (GGUF `attn_q`) gives per
 * token and head the head's query, then its gate, each `headDim` values. `prepareQueryGateSplit`
 * separates them out of the fused q/k/v product, and `prepareSigmoidGate` multiplies the
 * attention output by sigmoid(gate) before the output projection.
 */
import {
  checkBuffer,
  checkCount,
  fail,
  grid256,
  type KernelDispatch,
  prepareKernel,
} from "./kernel.ts";

/** Buffers and shape of {@linkcode prepareQueryGateSplit}. */
export interface QueryGateSplitArgs {
  /** f32 [tokens, 2Q + 2KV]: per row, each head's query then gate (2Q), then k (KV), v (KV). */
  input: GPUBuffer;
  /** Out: f32 [tokens, Q + 2KV], rows [q | k | v]; must not alias `input` or `gate`. */
  qkv: GPUBuffer;
  /** Out: f32 [tokens, Q], each head's gate; must not alias `input`. */
  gate: GPUBuffer;
  /** Tokens (rows). */
  tokens: number;
  /** Query heads. */
  heads: number;
  /** Key/value heads. */
  kvHeads: number;
  /** Values per head (query, gate, key and value alike). */
  headDim: number;
}

/**
 * Rows [q|gate interleaved per head (2Q) | k | v] → qkv rows [q | k | v] and gate rows [Q]
 * (Q = heads·headDim, KV = kvHeads·headDim), a bit-exact copy, one thread per input element.
 */
export async function prepareQueryGateSplit(
  device: GPUDevice,
  a: QueryGateSplitArgs,
  label = "query_gate:split",
): Promise<KernelDispatch> {
  for (const n of ["tokens", "heads", "kvHeads", "headDim"] as const) {
    checkCount(label, n, a[n], 1);
  }
  const q = a.heads * a.headDim, kv = a.kvHeads * a.headDim;
  const inWidth = 2 * q + 2 * kv, outWidth = q + 2 * kv;
  if (a.qkv === a.input) fail(label, "qkv must not alias input");
  if (a.gate === a.input) fail(label, "gate must not alias input");
  if (a.gate === a.qkv) fail(label, "gate must not alias qkv");
  checkBuffer(device, label, "input", a.input, a.tokens * inWidth * 4);
  checkBuffer(device, label, "qkv", a.qkv, a.tokens * outWidth * 4);
  checkBuffer(device, label, "gate", a.gate, a.tokens * q * 4);
  const count = a.tokens * inWidth;
  return await prepareKernel(device, {
    label,
    shader: "query_gate",
    entry: "split",
    uniform: [count, inWidth, q, a.headDim, outWidth, 0, 0, 0],
    buffers: { 1: a.input, 2: a.qkv, 3: a.gate },
    workgroups: grid256(device, count),
  });
}

/** Buffers and shape of {@linkcode prepareSigmoidGate}. */
export interface SigmoidGateArgs {
  /** In and out: f32 [tokens, width], the attention output (heads·headDim a row). */
  attn: GPUBuffer;
  /** f32 [tokens, width]: the gate (from {@linkcode prepareQueryGateSplit}); not `attn`. */
  gate: GPUBuffer;
  /** Tokens (rows). */
  tokens: number;
  /** Values a row (Q = heads·headDim). */
  width: number;
}

/** `attn[t, c] *= sigmoid(gate[t, c])` for c < width, in place, one thread per element. */
export async function prepareSigmoidGate(
  device: GPUDevice,
  a: SigmoidGateArgs,
  label = "query_gate:sigmoid",
): Promise<KernelDispatch> {
  checkCount(label, "tokens", a.tokens, 1);
  checkCount(label, "width", a.width, 1);
  if (a.gate === a.attn) fail(label, "gate must not alias attn");
  const count = a.tokens * a.width;
  checkBuffer(device, label, "attn", a.attn, count * 4);
  checkBuffer(device, label, "gate", a.gate, count * 4);
  return await prepareKernel(device, {
    label,
    shader: "query_gate",
    entry: "sigmoid_gate",
    uniform: [count, 0, 0, 0, 0, 0, 0, 0],
    buffers: { 4: a.attn, 5: a.gate },
    workgroups: grid256(device, count),
  });
}
