/**
 * Qwen3.5 (dense; `Qwen3_5ForCausalLM` / `qwen35`): gated delta net layers beside gated
 * full-attention layers (every fourth by default: HF `layer_types`; llama.cpp's files
 * `attention.recurrent_layers`, else `full_attention_interval`). Every layer has the pre-norm
 * SwiGLU MLP and (1 + w) RMSNorms (HF stores w, GGUF 1 + w). The attention layers compute each
 * head's query and output gate in one projection, normalise q and k per head and rotate part of
 * each head (NEOX; the multi-section RoPE of text positions is the plain rotation). The
 * multi-token-prediction block is not read; Qwen3.5-MoE is not described.
 */
import type { ArchDescription, Dim, LayerRole, MixRole, TensorEntry } from "./arch.ts";
import { ggufNames, GLOBAL_TENSORS, hfNames } from "./decoder.ts";

const ATTENTION = ["attention"] as const;
const DELTA = ["delta_net"] as const;

/** A tensor entry, shortened: role, HF name after `model.layers.N.`, GGUF name after `blk.N.`. */
function t(
  role: LayerRole,
  hf: string,
  gguf: string,
  shape: readonly Dim[],
  more: Partial<TensorEntry<LayerRole>> & { mix?: MixRole } = {},
): TensorEntry<LayerRole> {
  return { role, hf, gguf, shape, ...more };
}

const NORMS_MLP: readonly TensorEntry<LayerRole>[] = [
  t("inputNorm", "input_layernorm.weight", "attn_norm.weight", ["hidden"], { hfAddOne: true }),
  t("postNorm", "post_attention_layernorm.weight", "post_attention_norm.weight", ["hidden"], {
    hfAddOne: true,
  }),
  t("gate", "mlp.gate_proj.weight", "ffn_gate.weight", ["inter", "hidden"], { mix: "ffn_gate" }),
  t("up", "mlp.up_proj.weight", "ffn_up.weight", ["inter", "hidden"], { mix: "ffn_up" }),
  t("down", "mlp.down_proj.weight", "ffn_down.weight", ["hidden", "inter"], { mix: "ffn_down" }),
];

const ATTENTION_TENSORS: readonly TensorEntry<LayerRole>[] = [
  t("q", "self_attn.q_proj.weight", "attn_q.weight", ["q2", "hidden"], { mix: "attn_q" }),
  t("k", "self_attn.k_proj.weight", "attn_k.weight", ["kv", "hidden"], { mix: "attn_k" }),
  t("v", "self_attn.v_proj.weight", "attn_v.weight", ["kv", "hidden"], { mix: "attn_v" }),
  t("o", "self_attn.o_proj.weight", "attn_output.weight", ["hidden", "q"], {
    mix: "attn_output",
  }),
  t("qNorm", "self_attn.q_norm.weight", "attn_q_norm.weight", ["headDim"], { hfAddOne: true }),
  t("kNorm", "self_attn.k_norm.weight", "attn_k_norm.weight", ["headDim"], { hfAddOne: true }),
].map((e) => ({ ...e, kinds: ATTENTION }));

/** HF groups value heads by key head, llama.cpp tiles them: rows of v heads, or of one value. */
const vRows = (offset?: Dim) => ({
  axis: 0 as const,
  unit: "deltaVDim" as const,
  ...(offset ? { offset } : {}),
});
const heads = { hfTiledHeads: { axis: 0 as const, unit: "one" as const } };
const rec = { mix: "recurrent" } as const;
const DELTA_TENSORS: readonly TensorEntry<LayerRole>[] = [
  // llama.cpp's quantizer files `attn_qkv` with `attn_v` (more bits in some layers).
  t("deltaQkv", "in_proj_qkv.weight", "attn_qkv.weight", ["deltaConv", "hidden"], {
    mix: "attn_v",
    hfTiledHeads: vRows("deltaQk"),
  }),
  t("deltaZ", "in_proj_z.weight", "attn_gate.weight", ["deltaInner", "hidden"], {
    ...rec,
    hfTiledHeads: vRows(),
  }),
  t("deltaBeta", "in_proj_b.weight", "ssm_beta.weight", ["deltaVHeads", "hidden"], {
    ...rec,
    ...heads,
  }),
  t("deltaAlpha", "in_proj_a.weight", "ssm_alpha.weight", ["deltaVHeads", "hidden"], {
    ...rec,
    ...heads,
  }),
  t("ssmA", "A_log", "ssm_a", ["deltaVHeads"], { hfNegExp: true, ...heads }),
  t("ssmDtBias", "dt_bias", "ssm_dt.bias", ["deltaVHeads"], heads),
  t("ssmConv", "conv1d.weight", "ssm_conv1d.weight", ["deltaConv", "convWidth"], {
    hfShape: ["deltaConv", "one", "convWidth"],
    hfTiledHeads: vRows("deltaQk"),
  }),
  t("ssmNorm", "norm.weight", "ssm_norm.weight", ["deltaVDim"]),
  t("ssmOut", "out_proj.weight", "ssm_out.weight", ["hidden", "deltaInner"], {
    ...rec,
    hfTiledHeads: { axis: 1, unit: "deltaVDim" },
  }),
].map((e) => ({ ...e, hf: `linear_attn.${e.hf}`, kinds: DELTA }));

export const QWEN35: ArchDescription = {
  name: "qwen35",
  hf: {
    ...hfNames("Qwen3_5ForCausalLM", "qwen3_5_text", { fixed: { attn_output_gate: true } }),
    modelTypes: ["qwen3_5_text", "qwen3_5"],
  },
  gguf: ggufNames("qwen35"),
  tensors: {
    global: GLOBAL_TENSORS.map((e) => e.role === "norm" ? { ...e, hfAddOne: true as const } : e),
    layer: [...NORMS_MLP, ...ATTENTION_TENSORS, ...DELTA_TENSORS],
  },
  layer: [
    { op: "attn_norm_qkv", gatedQuery: true },
    { op: "qk_norm" },
    { op: "rope" },
    { op: "attention" },
    { op: "attention_gate" },
    { op: "o_proj_residual" },
    { op: "mlp", act: "silu" },
  ],
  kinds: {
    recipes: { delta_net: [{ op: "delta_net" }, { op: "mlp", act: "silu" }] },
    ggufZeroKvHeads: "delta_net",
    ggufMarks: "flags",
    hfKey: "layer_types",
    hfNames: { linear_attention: "delta_net", full_attention: "attention" },
    convWidth: { hf: "linear_conv_kernel_dim", gguf: "ssm.conv_kernel" },
    deltaHf: {
      kHeads: "linear_num_key_heads",
      kDim: "linear_key_head_dim",
      vHeads: "linear_num_value_heads",
      vDim: "linear_value_head_dim",
    },
  },
};
