/**
 * Qwen3-MoE: Qwen3's attention (per-head q/k RMSNorm, no q/k/v biases) with a mixture-of-experts
 * MLP in every layer: a router (`mlp.gate`) picks the top-k of `num_experts` SwiGLU experts per
 * token, their outputs weighted by the router's softmax (renormalised over the chosen ones when
 * `norm_topk_prob`). HF holds one tensor per expert (`mlp.experts.E.*`); llama.cpp's `qwen3moe`
 * stacks them (`ffn_*_exps`, [experts, ...]) and always renormalises. NEOX RoPE in llama.cpp, so
 * q/k rows are stored as in HF.
 */
import type { ArchDescription, LayerRole, TensorEntry } from "./arch.ts";
import {
  ATTN_IN,
  ATTN_OUT_MLP,
  GLOBAL_TENSORS,
  QK_NORMS,
  QKV_BIASES,
  SWIGLU_EXPERTS,
} from "./decoder.ts";

/** The router and the norm before it; the attention output projection. */
const MOE_IN: readonly TensorEntry<LayerRole>[] = [
  ...ATTN_OUT_MLP.filter((e) => e.role === "o" || e.role === "postNorm"),
  // llama.cpp keeps the router in F32 in every mix (a `vector` here).
  {
    role: "router",
    hf: "mlp.gate.weight",
    gguf: "ffn_gate_inp.weight",
    shape: ["experts", "hidden"],
  },
];

export const QWEN3_MOE: ArchDescription = {
  name: "qwen3moe",
  hf: {
    architectures: ["Qwen3MoeForCausalLM"],
    modelTypes: ["qwen3_moe"],
    config: { attentionBias: "attention_bias", slidingWindow: "flag" },
  },
  gguf: {
    architectures: ["qwen3moe"],
    write: "qwen3moe",
    interleavedQk: false,
    attentionBias: "tensors",
    ropeFreqs: false,
    expertWeightsNorm: true,
  },
  tensors: {
    global: GLOBAL_TENSORS,
    layer: [...ATTN_IN, ...QKV_BIASES, ...QK_NORMS, ...MOE_IN],
    experts: SWIGLU_EXPERTS,
  },
  layer: [
    { op: "attn_norm_qkv" },
    { op: "qk_norm" },
    { op: "rope" },
    { op: "attention" },
    { op: "o_proj_residual" },
    { op: "moe_mlp", act: "silu" },
  ],
};
