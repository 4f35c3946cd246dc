/**
 * Qwen2 (and 2.5): Llama's layer with q/k/v biases always; llama.cpp runs it with NEOX RoPE, HF's
 * rotate-half layout, so its q/k rows are stored as in HF.
 */
import type { ArchDescription } from "./arch.ts";
import { DECODER_LAYER, GLOBAL_TENSORS, PRE_NORM_SWIGLU } from "./decoder.ts";

export const QWEN2: ArchDescription = {
  name: "qwen2",
  hf: {
    architectures: ["Qwen2ForCausalLM"],
    modelTypes: ["qwen2"],
    config: { attentionBias: "always", slidingWindow: "flag" },
  },
  gguf: {
    architectures: ["qwen2"],
    write: "qwen2",
    interleavedQk: false,
    attentionBias: "always",
    ropeFreqs: false,
  },
  tensors: { global: GLOBAL_TENSORS, layer: DECODER_LAYER },
  layer: PRE_NORM_SWIGLU,
};
