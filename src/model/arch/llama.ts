/** Llama (1, 2, 3.x): the plain pre-norm decoder; llama.cpp interleaves its q/k rows. */
import type { ArchDescription } from "./arch.ts";
import { DECODER_LAYER, GLOBAL_TENSORS, PRE_NORM_SWIGLU } from "./decoder.ts";

export const LLAMA: ArchDescription = {
  name: "llama",
  hf: {
    architectures: ["LlamaForCausalLM"],
    modelTypes: ["llama"],
    config: { attentionBias: "attention_bias", slidingWindow: "flag" },
  },
  gguf: {
    architectures: ["llama"],
    write: "llama",
    interleavedQk: true,
    attentionBias: "tensors",
    ropeFreqs: true,
  },
  tensors: { global: GLOBAL_TENSORS, layer: DECODER_LAYER },
  layer: PRE_NORM_SWIGLU,
};
