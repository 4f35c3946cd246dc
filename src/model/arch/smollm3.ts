/**
 * SmolLM3: Llama's layer with RoPE skipped on some layers (NoPE: every 4th by default, HF's
 * `no_rope_layers` / `no_rope_layer_interval`; llama.cpp hard-codes every 4th). llama.cpp runs
 * it with NORM RoPE, so its q/k rows are interleaved as Llama's.
 */
import type { ArchDescription } from "./arch.ts";
import { DECODER_LAYER, ggufNames, GLOBAL_TENSORS, hfNames, PRE_NORM_SWIGLU } from "./decoder.ts";

export const SMOLLM3: ArchDescription = {
  name: "smollm3",
  hf: hfNames("SmolLM3ForCausalLM", "smollm3", { noRope: { defaultInterval: 4 } }),
  gguf: ggufNames("smollm3", { interleavedQk: true, noRopeInterval: 4 }),
  tensors: { global: GLOBAL_TENSORS, layer: DECODER_LAYER },
  layer: PRE_NORM_SWIGLU,
};
