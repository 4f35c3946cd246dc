/**
 * Gemma 3 (text): Gemma 2's layer with a per-head q/k RMSNorm (weights `1 + w` too) before
 * RoPE, no soft-caps by default, sliding-window layers in a pattern (`sliding_window_pattern`,
 * or `layer_types`) and a RoPE base of their own (`rope_local_base_freq`).
 */
import type { ArchDescription } from "./arch.ts";
import { ggufNames, hfNames } from "./decoder.ts";
import { GEMMA_GLOBAL, gemmaLayer, gemmaRules } from "./gemma2.ts";

export const GEMMA3: ArchDescription = {
  name: "gemma3",
  hf: hfNames("Gemma3ForCausalLM", "gemma3_text", gemmaRules(6)),
  gguf: ggufNames("gemma3", { hiddenPerHeadScaleAt: [62] }),
  tensors: { global: GEMMA_GLOBAL, layer: gemmaLayer(true) },
  layer: [
    { op: "attn_norm_qkv" },
    { op: "qk_norm" },
    { op: "rope" },
    { op: "attention" },
    { op: "o_proj_residual", postNorm: true },
    { op: "mlp", act: "gelu_tanh", postNorm: true },
  ],
  scaleEmbedding: true,
};
