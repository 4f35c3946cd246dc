/**
 * Mistral: Llama's layer; `sliding_window` alone turns its window on. llama.cpp writes these
 * checkpoints as `llama` (so does a conversion); `mistral.*` files are read too.
 */
import type { ArchDescription } from "./arch.ts";
import { DECODER_LAYER, ggufNames, GLOBAL_TENSORS, hfNames, PRE_NORM_SWIGLU } from "./decoder.ts";

export const MISTRAL: ArchDescription = {
  name: "mistral",
  hf: hfNames("MistralForCausalLM", "mistral", { slidingWindow: "when_set" }),
  gguf: ggufNames("mistral", { write: "llama", interleavedQk: true, ropeFreqs: true }),
  tensors: { global: GLOBAL_TENSORS, layer: DECODER_LAYER },
  layer: PRE_NORM_SWIGLU,
};
