/**
 * Mistral: Llama's layer; `sliding_window` alone turns its window on. llama.cpp writes these
 * checkpoints as `llama` (so does a conversion); `mistral.*` files are read too.
 */
import type { ArchDescription } from "./arch.ts";
import { DECODER_LAYER, GLOBAL_TENSORS, PRE_NORM_SWIGLU } from "./decoder.ts";

export const MISTRAL: ArchDescription = {
  name: "mistral",
  hf: {
    architectures: ["MistralForCausalLM"],
    modelTypes: ["mistral"],
    config: { attentionBias: "attention_bias", slidingWindow: "when_set" },
  },
  gguf: {
    architectures: ["mistral"],
    write: "llama",
    interleavedQk: true,
    attentionBias: "tensors",
    ropeFreqs: true,
  },
  tensors: { global: GLOBAL_TENSORS, layer: DECODER_LAYER },
  layer: PRE_NORM_SWIGLU,
};
