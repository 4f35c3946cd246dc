/**
 * Gemma 2: a pre-norm layer with "sandwich" norms (each sublayer's output normed again before
 * its residual add), a GeGLU MLP (tanh-approximated GELU), RMSNorm weights applied as `1 + w`
 * (HF stores `w`, GGUF `1 + w`), embeddings scaled by sqrt(hidden), a tied LM head, attention
 * scaled by 1/sqrt(`query_pre_attn_scalar`), attention and final logits soft-capped, and a
 * sliding window on every other layer (0, 2, ...). llama.cpp runs it with NEOX RoPE.
 */
import type { ArchDescription, GlobalRole, HfConfigRules, LayerRole, TensorEntry } from "./arch.ts";
import { ATTN_IN, ATTN_OUT_MLP, GLOBAL_TENSORS, QK_NORMS, QKV_BIASES } from "./decoder.ts";
import { ggufNames, hfNames } from "./decoder.ts";

/** Norm weights (every role ending in `Norm`, and the final `norm`) are stored less one in HF. */
const addOne = <R extends string>(e: TensorEntry<R>): TensorEntry<R> =>
  /Norm$|^norm$/.test(e.role) ? { ...e, hfAddOne: true } : e;

export const GEMMA_GLOBAL: readonly TensorEntry<GlobalRole>[] = GLOBAL_TENSORS.map(addOne);

const [O, _mlpNorm, GATE, UP, DOWN] = ATTN_OUT_MLP;

/**
 * Gemma's layer tensors (q/k/v biases with `attention_bias`, as HF's Gemma layers have them);
 * with `qkNorm`, Gemma 3's per-head q/k norms.
 */
export function gemmaLayer(qkNorm: boolean): readonly TensorEntry<LayerRole>[] {
  const layer: TensorEntry<LayerRole>[] = [
    ...ATTN_IN,
    ...QKV_BIASES,
    ...(qkNorm ? QK_NORMS : []),
    O!,
    {
      role: "attnOutNorm",
      hf: "post_attention_layernorm.weight",
      gguf: "post_attention_norm.weight",
      shape: ["hidden"],
    },
    {
      role: "postNorm",
      hf: "pre_feedforward_layernorm.weight",
      gguf: "ffn_norm.weight",
      shape: ["hidden"],
    },
    GATE!,
    UP!,
    DOWN!,
    {
      role: "mlpOutNorm",
      hf: "post_feedforward_layernorm.weight",
      gguf: "post_ffw_norm.weight",
      shape: ["hidden"],
    },
  ];
  return layer.map(addOne);
}

/**
 * Gemma's HF config rules: the window whenever `sliding_window` is set, on layers in a pattern of
 * `windowPattern`; GELU; the LM head tied unless the config says otherwise.
 */
export function gemmaRules(windowPattern: number): Partial<HfConfigRules> {
  return {
    slidingWindow: "when_set",
    windowPattern,
    act: "gelu_pytorch_tanh",
    tiedByDefault: true,
  };
}

export const GEMMA2: ArchDescription = {
  name: "gemma2",
  hf: hfNames("Gemma2ForCausalLM", "gemma2", gemmaRules(2)),
  gguf: ggufNames("gemma2", { hiddenPerHeadScaleAt: [46] }),
  tensors: { global: GEMMA_GLOBAL, layer: gemmaLayer(false) },
  layer: [
    { op: "attn_norm_qkv" },
    { op: "rope" },
    { op: "attention" },
    { op: "o_proj_residual", postNorm: true },
    { op: "mlp", act: "gelu_tanh", postNorm: true },
  ],
  scaleEmbedding: true,
};
