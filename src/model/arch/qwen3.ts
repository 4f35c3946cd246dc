/**
 * Qwen3 (dense): Qwen2's layer without q/k/v biases (unless `attention_bias`), plus a per-head
 * RMSNorm on q and on k before RoPE; head_dim is its own key (not hidden / heads). llama.cpp
 * runs it with NEOX RoPE, so q/k rows are stored as in HF.
 */
import type { ArchDescription, LayerStep } from "./arch.ts";
import { ATTN_IN, ATTN_OUT_MLP, GLOBAL_TENSORS, QK_NORMS, QKV_BIASES } from "./decoder.ts";
import { ggufNames, hfNames } from "./decoder.ts";

/** Qwen3's attention half of a layer: q/k normed per head before RoPE (Qwen3-MoE's too). */
export const QWEN3_ATTENTION: readonly LayerStep[] = [
  { op: "attn_norm_qkv" },
  { op: "qk_norm" },
  { op: "rope" },
  { op: "attention" },
  { op: "o_proj_residual" },
];

export const QWEN3: ArchDescription = {
  name: "qwen3",
  hf: hfNames("Qwen3ForCausalLM", "qwen3"),
  gguf: ggufNames("qwen3"),
  tensors: {
    global: GLOBAL_TENSORS,
    layer: [...ATTN_IN, ...QKV_BIASES, ...QK_NORMS, ...ATTN_OUT_MLP],
  },
  layer: [...QWEN3_ATTENTION, { op: "mlp", act: "silu" }],
};
