/**
 * Granite 4.0-H (`GraniteMoeHybridForCausalLM` / `granitehybrid`), dense variants: Mamba2 layers
 * beside attention layers, one kind per layer (HF `layer_types`; in GGUF files a layer with 0 KV
 * heads in the per-layer `head_count_kv` array is a Mamba2 layer), every layer with the pre-norm
 * SwiGLU MLP (HF's `shared_mlp`: gate and up rows in one `input_linear`), Granite's four
 * multipliers, and attention without RoPE when the config says `position_embedding_type: "nope"`
 * (llama.cpp's files: `rope.scaling.finetuned` false). The MoE variants are refused by name.
 */
import type { ArchDescription, Dim, LayerRole, MixRole, TensorEntry } from "./arch.ts";
import { ggufNames, GLOBAL_TENSORS, hfNames, PRE_NORM_SWIGLU } from "./decoder.ts";

const ATTENTION = ["attention"] as const;
const MAMBA = ["mamba2"] as const;

/** Every layer's norms and MLP (HF: the shared MLP, gate and up stacked). */
const NORMS_MLP: readonly TensorEntry<LayerRole>[] = [
  { role: "inputNorm", hf: "input_layernorm.weight", gguf: "attn_norm.weight", shape: ["hidden"] },
  {
    role: "postNorm",
    hf: "post_attention_layernorm.weight",
    gguf: "ffn_norm.weight",
    shape: ["hidden"],
  },
  ...(["gate", "up"] as const).map((role, part): TensorEntry<LayerRole> => ({
    role,
    hf: "shared_mlp.input_linear.weight",
    gguf: `ffn_${role}.weight`,
    shape: ["inter", "hidden"],
    hfRows: { of: ["inter2", "hidden"], part, parts: 2 },
    mix: role === "gate" ? "ffn_gate" : "ffn_up",
  })),
  {
    role: "down",
    hf: "shared_mlp.output_linear.weight",
    gguf: "ffn_down.weight",
    shape: ["hidden", "inter"],
    mix: "ffn_down",
  },
];

const ATTENTION_TENSORS: readonly TensorEntry<LayerRole>[] = (
  [
    ["q", "q_proj", "attn_q", ["q", "hidden"], "attn_q", "q"],
    ["k", "k_proj", "attn_k", ["kv", "hidden"], "attn_k", "k"],
    ["v", "v_proj", "attn_v", ["kv", "hidden"], "attn_v", undefined],
    ["o", "o_proj", "attn_output", ["hidden", "q"], "attn_output", undefined],
  ] as const
).map(([role, hf, gguf, shape, mix, heads]) => ({
  role,
  hf: `self_attn.${hf}.weight`,
  gguf: `${gguf}.weight`,
  shape,
  mix,
  kinds: ATTENTION,
  ...(heads ? { heads } : {}),
}));

/** A Mamba2 tensor: `hf` after `mamba.`; GGUF names as llama.cpp's converter writes them. */
function ssm(
  role: LayerRole,
  hf: string,
  gguf: string,
  shape: readonly Dim[],
  more: Partial<TensorEntry<LayerRole>> & { mix?: MixRole } = {},
): TensorEntry<LayerRole> {
  return { role, hf: `mamba.${hf}`, gguf, shape, kinds: MAMBA, ...more };
}

const MAMBA_TENSORS: readonly TensorEntry<LayerRole>[] = [
  ssm("ssmIn", "in_proj.weight", "ssm_in.weight", ["ssmIn", "hidden"], { mix: "recurrent" }),
  ssm("ssmConv", "conv1d.weight", "ssm_conv1d.weight", ["ssmConv", "convWidth"], {
    hfShape: ["ssmConv", "one", "convWidth"],
  }),
  ssm("ssmConvBias", "conv1d.bias", "ssm_conv1d.bias", ["ssmConv"]),
  ssm("ssmDtBias", "dt_bias", "ssm_dt.bias", ["ssmHeads"]),
  ssm("ssmA", "A_log", "ssm_a", ["ssmHeads", "one"], { hfShape: ["ssmHeads"], hfNegExp: true }),
  ssm("ssmD", "D", "ssm_d", ["ssmHeads", "one"], { hfShape: ["ssmHeads"] }),
  ssm("ssmNorm", "norm.weight", "ssm_norm.weight", ["ssmGroups", "ssmGroupWidth"], {
    hfShape: ["ssmInner"],
  }),
  ssm("ssmOut", "out_proj.weight", "ssm_out.weight", ["hidden", "ssmInner"], {
    mix: "recurrent",
  }),
];

export const GRANITE_HYBRID: ArchDescription = {
  name: "granitehybrid",
  hf: hfNames("GraniteMoeHybridForCausalLM", "granitemoehybrid", {
    multipliers: true,
    keys: { intermediateSize: "shared_intermediate_size" },
    positionEmbeddingType: true,
    noExperts: "num_local_experts",
  }),
  gguf: ggufNames("granitehybrid", {
    interleavedQk: true,
    multipliers: true,
    ropeFinetunedSwitch: true,
  }),
  tensors: {
    global: GLOBAL_TENSORS,
    layer: [...NORMS_MLP, ...ATTENTION_TENSORS, ...MAMBA_TENSORS],
  },
  layer: PRE_NORM_SWIGLU,
  kinds: {
    recipes: { mamba2: [{ op: "mamba2" }, { op: "mlp", act: "silu" }] },
    ggufZeroKvHeads: "mamba2",
    hfKey: "layer_types",
    hfNames: { mamba: "mamba2", attention: "attention" },
    convWidth: { hf: "mamba_d_conv", gguf: "ssm.conv_kernel" },
    ssmHf: {
      heads: "mamba_n_heads",
      headDim: "mamba_d_head",
      state: "mamba_d_state",
      groups: "mamba_n_groups",
      convBias: "mamba_conv_bias",
      projBias: "mamba_proj_bias",
    },
  },
};
