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
  ggufNames,
  GLOBAL_TENSORS,
  hfNames,
  QK_NORMS,
  QKV_BIASES,
  SWIGLU_EXPERTS,
} from "./decoder.ts";
import { QWEN3_ATTENTION } from "./qwen3.ts";

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
  hf: hfNames("Qwen3MoeForCausalLM", "qwen3_moe"),
  gguf: ggufNames("qwen3moe", { expertWeightsNorm: true }),
  tensors: {
    global: GLOBAL_TENSORS,
    layer: [...ATTN_IN, ...QKV_BIASES, ...QK_NORMS, ...MOE_IN],
    experts: SWIGLU_EXPERTS,
  },
  layer: [...QWEN3_ATTENTION, { op: "moe_mlp", act: "silu" }],
};
