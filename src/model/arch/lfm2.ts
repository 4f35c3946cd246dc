/**
 * LFM2 / LFM2.5 (Liquid AI): a hybrid of gated short-convolution layers and attention layers, one
 * kind per layer (HF `layer_types`; in GGUF files a layer with 0 KV heads in the per-layer
 * `head_count_kv` array is a convolution layer). Every layer has the pre-norm SwiGLU MLP; the
 * attention layers normalise q and k per head (Qwen3's attention half, NEOX RoPE); the final norm
 * is `embedding_norm` (`token_embd_norm` in llama.cpp's files). LFM2-MoE is not described yet.
 */
import type { ArchDescription, LayerRole, MixRole, TensorEntry } from "./arch.ts";
import { ggufNames, GLOBAL_TENSORS, hfNames } from "./decoder.ts";
import { QWEN3_ATTENTION } from "./qwen3.ts";

const ATTENTION = ["attention"] as const;
const CONV = ["short_conv"] as const;

/** Every layer's norms and SwiGLU MLP. */
const NORMS_MLP: readonly TensorEntry<LayerRole>[] = [
  { role: "inputNorm", hf: "operator_norm.weight", gguf: "attn_norm.weight", shape: ["hidden"] },
  { role: "postNorm", hf: "ffn_norm.weight", gguf: "ffn_norm.weight", shape: ["hidden"] },
  {
    role: "gate",
    hf: "feed_forward.w1.weight",
    gguf: "ffn_gate.weight",
    shape: ["inter", "hidden"],
    mix: "ffn_gate",
  },
  {
    role: "up",
    hf: "feed_forward.w3.weight",
    gguf: "ffn_up.weight",
    shape: ["inter", "hidden"],
    mix: "ffn_up",
  },
  {
    role: "down",
    hf: "feed_forward.w2.weight",
    gguf: "ffn_down.weight",
    shape: ["hidden", "inter"],
    mix: "ffn_down",
  },
];

/** The attention layers' projections and per-head q/k norms. */
const ATTENTION_TENSORS: readonly TensorEntry<LayerRole>[] = [
  ["q", "q_proj", "attn_q", ["q", "hidden"], "attn_q"],
  ["k", "k_proj", "attn_k", ["kv", "hidden"], "attn_k"],
  ["v", "v_proj", "attn_v", ["kv", "hidden"], "attn_v"],
  ["o", "out_proj", "attn_output", ["hidden", "q"], "attn_output"],
  ["qNorm", "q_layernorm", "attn_q_norm", ["headDim"], "vector"],
  ["kNorm", "k_layernorm", "attn_k_norm", ["headDim"], "vector"],
].map(([role, hf, gguf, shape, mix]) => ({
  role: role as LayerRole,
  hf: `self_attn.${hf}.weight`,
  gguf: `${gguf}.weight`,
  shape: shape as TensorEntry<LayerRole>["shape"],
  mix: mix as MixRole,
  kinds: ATTENTION,
}));

/** The convolution layers' projections and taps (HF's taps are a depthwise Conv1d's). */
const CONV_TENSORS: readonly TensorEntry<LayerRole>[] = [
  {
    role: "convIn",
    hf: "conv.in_proj.weight",
    gguf: "shortconv.in_proj.weight",
    shape: ["hidden3", "hidden"],
    mix: "recurrent",
    kinds: CONV,
  },
  {
    role: "conv",
    hf: "conv.conv.weight",
    gguf: "shortconv.conv.weight",
    shape: ["hidden", "convWidth"],
    hfShape: ["hidden", "one", "convWidth"],
    kinds: CONV,
  },
  {
    role: "convOut",
    hf: "conv.out_proj.weight",
    gguf: "shortconv.out_proj.weight",
    shape: ["hidden", "hidden"],
    mix: "recurrent",
    kinds: CONV,
  },
];

export const LFM2: ArchDescription = {
  name: "lfm2",
  hf: {
    ...hfNames("Lfm2ForCausalLM", "lfm2", {
      keys: { rmsNormEps: "norm_eps", tieWordEmbeddings: "tie_embedding" },
      tiedByDefault: true,
      blockFfDim: true,
    }),
    architectures: ["Lfm2ForCausalLM", "LFM2ForCausalLM"],
  },
  gguf: ggufNames("lfm2"),
  tensors: {
    // The final norm is `embedding_norm` (llama.cpp: `token_embd_norm`).
    global: GLOBAL_TENSORS.map((e) =>
      e.role === "norm"
        ? { ...e, hf: "model.embedding_norm.weight", gguf: "token_embd_norm.weight" }
        : e
    ),
    layer: [...NORMS_MLP, ...ATTENTION_TENSORS, ...CONV_TENSORS],
  },
  layer: [...QWEN3_ATTENTION, { op: "mlp", act: "silu" }],
  kinds: {
    recipes: { short_conv: [{ op: "short_conv" }, { op: "mlp", act: "silu" }] },
    ggufZeroKvHeads: "short_conv",
    hfKey: "layer_types",
    hfNames: { conv: "short_conv", full_attention: "attention" },
    convWidth: { hf: "conv_L_cache", gguf: "shortconv.l_cache" },
  },
};
