/**
 * OLMo 2: no pre-norms; the attention output and the MLP output are each RMSNorm'd before
 * their residual add, and q and k are RMSNorm'd over their whole projection width (not per
 * head) before RoPE. llama.cpp runs it with NEOX RoPE, so q/k rows are stored as in HF.
 */
import type { ArchDescription, LayerRole, TensorEntry } from "./arch.ts";
import { ATTN_IN, ATTN_OUT_MLP, GLOBAL_TENSORS, QK_NORMS, QKV_BIASES } from "./decoder.ts";

const WHOLE_QK_NORMS: readonly TensorEntry<LayerRole>[] = QK_NORMS.map((e) => ({
  ...e,
  shape: [e.role === "qNorm" ? "q" : "kv"],
}));

const POST_NORMS: readonly TensorEntry<LayerRole>[] = [
  {
    role: "attnOutNorm",
    hf: "post_attention_layernorm.weight",
    gguf: "post_attention_norm.weight",
    shape: ["hidden"],
  },
  {
    role: "mlpOutNorm",
    hf: "post_feedforward_layernorm.weight",
    gguf: "post_ffw_norm.weight",
    shape: ["hidden"],
  },
];

export const OLMO2: ArchDescription = {
  name: "olmo2",
  hf: {
    architectures: ["Olmo2ForCausalLM"],
    modelTypes: ["olmo2"],
    config: { attentionBias: "attention_bias", slidingWindow: "flag" },
  },
  gguf: {
    architectures: ["olmo2"],
    write: "olmo2",
    interleavedQk: false,
    attentionBias: "tensors",
    ropeFreqs: false,
  },
  tensors: {
    global: GLOBAL_TENSORS,
    layer: [
      ...ATTN_IN.filter((e) => e.role !== "inputNorm"),
      ...QKV_BIASES,
      ...WHOLE_QK_NORMS,
      ...ATTN_OUT_MLP.filter((e) => e.role !== "postNorm"),
      ...POST_NORMS,
    ],
  },
  layer: [
    { op: "qkv" },
    { op: "qk_norm", width: "projection" },
    { op: "rope" },
    { op: "attention" },
    { op: "o_proj_residual", postNorm: true },
    { op: "mlp", act: "silu", preNorm: false, postNorm: true },
  ],
};
