/**
 * Qwen2 (and 2.5): Llama's layer with q/k/v biases always; llama.cpp runs it with NEOX RoPE, HF's
 * rotate-half layout, so its q/k rows are stored as in HF.
 */
import type { ArchDescription } from "./arch.ts";
import { DECODER_LAYER, ggufNames, GLOBAL_TENSORS, hfNames, PRE_NORM_SWIGLU } from "./decoder.ts";

export const QWEN2: ArchDescription = {
  name: "qwen2",
  hf: hfNames("Qwen2ForCausalLM", "qwen2", { attentionBias: "always" }),
  gguf: ggufNames("qwen2", { attentionBias: "always" }),
  tensors: { global: GLOBAL_TENSORS, layer: DECODER_LAYER },
  layer: PRE_NORM_SWIGLU,
};
