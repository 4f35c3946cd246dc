/**
 * The pieces most decoder families share: the global tensors, the attention and MLP tensors of
 * a pre-norm layer (HF and llama.cpp names), the plain pre-norm layer recipe, and the usual HF
 * and GGUF naming rules. Family files compose their descriptions from these.
 */
import type {
  ArchDescription,
  ExpertRole,
  GlobalRole,
  HfConfigRules,
  LayerRole,
  LayerStep,
  TensorEntry,
} from "./arch.ts";

/**
 * A family's HF names: one `architectures[0]` and one `model_type`; its config rules are
 * `config` over the usual ones (biases as `attention_bias` says, the window as
 * `use_sliding_window` says).
 */
export function hfNames(
  architecture: string,
  modelType: string,
  config: Partial<HfConfigRules> = {},
): ArchDescription["hf"] {
  return {
    architectures: [architecture],
    modelTypes: [modelType],
    config: { attentionBias: "attention_bias", slidingWindow: "flag", ...config },
  };
}

/**
 * A family's GGUF names: files of `general.architecture` `arch`, and a conversion writes `arch`;
 * `rest` over the usual rules (q/k rows as in HF, biases when the file has them, no
 * `rope_freqs.weight`).
 */
export function ggufNames(
  arch: string,
  rest: Partial<ArchDescription["gguf"]> = {},
): ArchDescription["gguf"] {
  return {
    architectures: [arch],
    write: arch,
    interleavedQk: false,
    attentionBias: "tensors",
    ropeFreqs: false,
    ...rest,
  };
}

/** Embedding, final norm and LM head (absent when tied to the embedding). */
export const GLOBAL_TENSORS: readonly TensorEntry<GlobalRole>[] = [
  {
    role: "embed",
    hf: "model.embed_tokens.weight",
    gguf: "token_embd.weight",
    shape: ["vocab", "hidden"],
    mix: "embed",
  },
  { role: "norm", hf: "model.norm.weight", gguf: "output_norm.weight", shape: ["hidden"] },
  {
    role: "lmHead",
    hf: "lm_head.weight",
    gguf: "output.weight",
    shape: ["vocab", "hidden"],
    when: "untiedHead",
    mix: "output",
  },
];

/** Input norm and the q/k/v projections of a layer, in llama.cpp's order. */
export const ATTN_IN: readonly TensorEntry<LayerRole>[] = [
  { role: "inputNorm", hf: "input_layernorm.weight", gguf: "attn_norm.weight", shape: ["hidden"] },
  {
    role: "q",
    hf: "self_attn.q_proj.weight",
    gguf: "attn_q.weight",
    shape: ["q", "hidden"],
    heads: "q",
    mix: "attn_q",
  },
  {
    role: "k",
    hf: "self_attn.k_proj.weight",
    gguf: "attn_k.weight",
    shape: ["kv", "hidden"],
    heads: "k",
    mix: "attn_k",
  },
  {
    role: "v",
    hf: "self_attn.v_proj.weight",
    gguf: "attn_v.weight",
    shape: ["kv", "hidden"],
    mix: "attn_v",
  },
];

/** q/k/v biases, present with attention biases. */
export const QKV_BIASES: readonly TensorEntry<LayerRole>[] = [
  {
    role: "qBias",
    hf: "self_attn.q_proj.bias",
    gguf: "attn_q.bias",
    shape: ["q"],
    when: "attentionBias",
    heads: "q",
  },
  {
    role: "kBias",
    hf: "self_attn.k_proj.bias",
    gguf: "attn_k.bias",
    shape: ["kv"],
    when: "attentionBias",
    heads: "k",
  },
  {
    role: "vBias",
    hf: "self_attn.v_proj.bias",
    gguf: "attn_v.bias",
    shape: ["kv"],
    when: "attentionBias",
  },
];

/** Per-head RMSNorm weights of q and k, shared by every head. */
export const QK_NORMS: readonly TensorEntry<LayerRole>[] = [
  {
    role: "qNorm",
    hf: "self_attn.q_norm.weight",
    gguf: "attn_q_norm.weight",
    shape: ["headDim"],
  },
  {
    role: "kNorm",
    hf: "self_attn.k_norm.weight",
    gguf: "attn_k_norm.weight",
    shape: ["headDim"],
  },
];

/** The attention output projection, the MLP norm and the SwiGLU MLP. */
export const ATTN_OUT_MLP: readonly TensorEntry<LayerRole>[] = [
  {
    role: "o",
    hf: "self_attn.o_proj.weight",
    gguf: "attn_output.weight",
    shape: ["hidden", "q"],
    mix: "attn_output",
  },
  {
    role: "postNorm",
    hf: "post_attention_layernorm.weight",
    gguf: "ffn_norm.weight",
    shape: ["hidden"],
  },
  {
    role: "gate",
    hf: "mlp.gate_proj.weight",
    gguf: "ffn_gate.weight",
    shape: ["inter", "hidden"],
    mix: "ffn_gate",
  },
  {
    role: "up",
    hf: "mlp.up_proj.weight",
    gguf: "ffn_up.weight",
    shape: ["inter", "hidden"],
    mix: "ffn_up",
  },
  {
    role: "down",
    hf: "mlp.down_proj.weight",
    gguf: "ffn_down.weight",
    shape: ["hidden", "inter"],
    mix: "ffn_down",
  },
];

/** One expert's SwiGLU MLP, under HF's per-expert names and llama.cpp's stacked ones. */
export const SWIGLU_EXPERTS: readonly TensorEntry<ExpertRole>[] = [
  {
    role: "gate",
    hf: "mlp.experts.{E}.gate_proj.weight",
    gguf: "ffn_gate_exps.weight",
    shape: ["expertInter", "hidden"],
    mix: "ffn_gate",
  },
  {
    role: "up",
    hf: "mlp.experts.{E}.up_proj.weight",
    gguf: "ffn_up_exps.weight",
    shape: ["expertInter", "hidden"],
    mix: "ffn_up",
  },
  {
    role: "down",
    hf: "mlp.experts.{E}.down_proj.weight",
    gguf: "ffn_down_exps.weight",
    shape: ["hidden", "expertInter"],
    mix: "ffn_down",
  },
];

/** A pre-norm layer's tensors, biases optional. */
export const DECODER_LAYER: readonly TensorEntry<LayerRole>[] = [
  ...ATTN_IN,
  ...QKV_BIASES,
  ...ATTN_OUT_MLP,
];

/** The pre-norm layer: attention then a SwiGLU MLP, each added to the residual stream. */
export const PRE_NORM_SWIGLU: readonly LayerStep[] = [
  { op: "attn_norm_qkv" },
  { op: "rope" },
  { op: "attention" },
  { op: "o_proj_residual" },
  { op: "mlp", act: "silu" },
];

/** Whether a layer recipe has a mixture-of-experts MLP (its config then has `moe`). */
export function hasExperts(layer: readonly LayerStep[]): boolean {
  return layer.some((s) => s.op === "moe_mlp");
}
