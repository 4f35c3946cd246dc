/**
 * Granite (3.x dense): Llama's layer with four scalar multipliers: the embedding output, each
 * residual branch, the attention scores (in place of 1/sqrt(head_dim)) and the logits (divided).
 * llama.cpp runs it with NORM RoPE, so q/k rows are interleaved as Llama's.
 */
import type { ArchDescription } from "./arch.ts";
import { DECODER_LAYER, ggufNames, GLOBAL_TENSORS, hfNames, PRE_NORM_SWIGLU } from "./decoder.ts";

export const GRANITE: ArchDescription = {
  name: "granite",
  hf: hfNames("GraniteForCausalLM", "granite", { multipliers: true }),
  gguf: ggufNames("granite", { interleavedQk: true, multipliers: true }),
  tensors: { global: GLOBAL_TENSORS, layer: DECODER_LAYER },
  layer: PRE_NORM_SWIGLU,
};
