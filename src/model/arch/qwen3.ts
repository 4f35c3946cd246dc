/**
 * Qwen3 (dense): Qwen2's layer without q/k/v biases (unless `attention_bias`), plus a per-head
 * RMSNorm on q and on k before RoPE; head_dim is its own key (not hidden / heads). llama.cpp
 * runs it with NEOX RoPE, so q/k rows are stored as in HF.
 */
import type { ArchDescription } from "./arch.ts";
import { ATTN_IN, ATTN_OUT_MLP, GLOBAL_TENSORS, QK_NORMS, QKV_BIASES } from "./decoder.ts";

export const QWEN3: ArchDescription = {
  name: "qwen3",
  hf: {
    architectures: ["Qwen3ForCausalLM"],
    modelTypes: ["qwen3"],
    config: { attentionBias: "attention_bias", slidingWindow: "flag" },
  },
  gguf: {
    architectures: ["qwen3"],
    write: "qwen3",
    interleavedQk: false,
    attentionBias: "tensors",
    ropeFreqs: false,
  },
  tensors: {
    global: GLOBAL_TENSORS,
    layer: [...ATTN_IN, ...QKV_BIASES, ...QK_NORMS, ...ATTN_OUT_MLP],
  },
  layer: [
    { op: "attn_norm_qkv" },
    { op: "qk_norm" },
    { op: "rope" },
    { op: "attention" },
    { op: "o_proj_residual" },
    { op: "mlp", act: "silu" },
  ],
};
