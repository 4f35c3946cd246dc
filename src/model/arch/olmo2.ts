/**
 * OLMo 2: no pre-norms; the attention output and the MLP output are each RMSNorm'd before
 * their residual add, and q and k are RMSNorm'd over their whole projection width (not per
 * head) before RoPE. llama.cpp runs it with NEOX RoPE, so q/k rows are stored as in HF. OLMo 3
 * is the same layer with sliding-window attention on some layers (`attention_knobs.ts`).
 */
import type { ArchDescription, LayerRole, TensorEntry } from "./arch.ts";
import { ATTN_IN, ATTN_OUT_MLP, GLOBAL_TENSORS, QK_NORMS, QKV_BIASES } from "./decoder.ts";
import { ggufNames } from "./decoder.ts";

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
    // OLMo 3 is OLMo 2 with sliding-window layers (llama.cpp runs it as olmo2 with the window):
    // `sliding_window` with `layer_types`, or without them every layer but each 4th.
    architectures: ["Olmo2ForCausalLM", "Olmo3ForCausalLM"],
    modelTypes: ["olmo2", "olmo3"],
    config: { attentionBias: "attention_bias", slidingWindow: "when_set", windowPattern: 4 },
  },
  gguf: ggufNames("olmo2"),
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
