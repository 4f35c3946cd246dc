/** Llama (1, 2, 3.x): the plain pre-norm decoder; llama.cpp interleaves its q/k rows. */
import type { ArchDescription } from "./arch.ts";
import { DECODER_LAYER, ggufNames, GLOBAL_TENSORS, hfNames, PRE_NORM_SWIGLU } from "./decoder.ts";

export const LLAMA: ArchDescription = {
  name: "llama",
  hf: hfNames("LlamaForCausalLM", "llama"),
  gguf: ggufNames("llama", { interleavedQk: true, ropeFreqs: true }),
  tensors: { global: GLOBAL_TENSORS, layer: DECODER_LAYER },
  layer: PRE_NORM_SWIGLU,
};
