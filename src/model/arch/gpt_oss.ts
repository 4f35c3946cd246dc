/**
 * gpt-oss: a pre-norm layer whose attention has q/k/v/o biases, one learned sink logit per query
 * head (it joins each softmax's denominator) and a sliding window on every other layer (0, 2,
 * ...), with YaRN-scaled NEOX RoPE; and a mixture-of-experts MLP in every layer: a router with a
 * bias picks the top-k experts, weighted by the softmax over the k chosen logits (the
 * renormalised softmax), each expert a clamped SwiGLU (`swiglu_oai`) with biases on gate, up and
 * down. HF checkpoints fuse the experts (`mlp.experts.gate_up_proj`, interleaved gate/up, in
 * bf16 or as MXFP4 blocks); llama.cpp's `gpt-oss` stacks them per projection (`ffn_*_exps`).
 */
import type { ArchDescription, ExpertRole, LayerRole, TensorEntry } from "./arch.ts";
import { ATTN_IN, ATTN_OUT_MLP, GLOBAL_TENSORS, QKV_BIASES, SWIGLU_EXPERTS } from "./decoder.ts";
import { ggufNames, hfNames } from "./decoder.ts";

const LAYER: readonly TensorEntry<LayerRole>[] = [
  ...ATTN_IN,
  ...QKV_BIASES,
  ATTN_OUT_MLP.find((e) => e.role === "o")!,
  {
    role: "oBias",
    hf: "self_attn.o_proj.bias",
    gguf: "attn_output.bias",
    shape: ["hidden"],
    when: "attentionBias",
  },
  { role: "sinks", hf: "self_attn.sinks", gguf: "attn_sinks.weight", shape: ["heads"] },
  {
    role: "postNorm",
    hf: "post_attention_layernorm.weight",
    gguf: "post_attention_norm.weight",
    shape: ["hidden"],
  },
  // llama.cpp keeps the router in F32 in every mix (a `vector` here).
  {
    role: "router",
    hf: "mlp.router.weight",
    gguf: "ffn_gate_inp.weight",
    shape: ["experts", "hidden"],
  },
  { role: "routerBias", hf: "mlp.router.bias", gguf: "ffn_gate_inp.bias", shape: ["experts"] },
];

/** SwiGLU experts with a bias on each projection (HF names: what `fused_experts.ts` splits). */
const EXPERTS: readonly TensorEntry<ExpertRole>[] = [
  ...SWIGLU_EXPERTS,
  {
    role: "gateBias",
    hf: "mlp.experts.{E}.gate_proj.bias",
    gguf: "ffn_gate_exps.bias",
    shape: ["expertInter"],
  },
  {
    role: "upBias",
    hf: "mlp.experts.{E}.up_proj.bias",
    gguf: "ffn_up_exps.bias",
    shape: ["expertInter"],
  },
  {
    role: "downBias",
    hf: "mlp.experts.{E}.down_proj.bias",
    gguf: "ffn_down_exps.bias",
    shape: ["hidden"],
  },
];

export const GPT_OSS: ArchDescription = {
  name: "gpt-oss",
  hf: hfNames("GptOssForCausalLM", "gpt_oss", {
    slidingWindow: "when_set",
    windowPattern: 2,
    experts: { count: "num_local_experts", width: "intermediate_size", normTopK: true },
    mxfp4: true,
  }),
  gguf: ggufNames("gpt-oss", { expertWeightsNorm: true, swigluLimit: 7 }),
  tensors: { global: GLOBAL_TENSORS, layer: LAYER, experts: EXPERTS },
  layer: [
    { op: "attn_norm_qkv" },
    { op: "rope" },
    { op: "attention", sinks: true },
    { op: "o_proj_residual" },
    { op: "moe_mlp", act: "swiglu_oai", biases: true },
  ],
  fusedExperts: { gateUp: "mlp.experts.gate_up_proj", down: "mlp.experts.down_proj" },
};
