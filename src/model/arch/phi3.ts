/**
 * Phi-3 / 3.5 / 4-mini: Llama's pre-norm layer with q/k/v stacked in one tensor (`qkv_proj`)
 * and gate/up in another (`gate_up_proj`, gate first), which Kiln's stacked products read as
 * they are; partial rotary (`partial_rotary_factor`; GGUF `rope.dimension_count`). llama.cpp
 * runs it with NEOX RoPE (rows as in HF) and without a sliding window whatever the config says
 * (it logs that Phi SWA is disabled): Kiln follows llama.cpp and ignores `sliding_window`.
 */
import type { ArchDescription } from "./arch.ts";
import { ATTN_IN, ATTN_OUT_MLP, GLOBAL_TENSORS, PRE_NORM_SWIGLU } from "./decoder.ts";
import { ggufNames, hfNames } from "./decoder.ts";

export const PHI3: ArchDescription = {
  name: "phi3",
  hf: hfNames("Phi3ForCausalLM", "phi3", { slidingWindow: "ignored" }),
  gguf: ggufNames("phi3", { ignoresSlidingWindow: true }),
  tensors: {
    global: GLOBAL_TENSORS,
    layer: [
      ...ATTN_IN.filter((e) => e.role === "inputNorm"),
      {
        role: "qkv",
        hf: "self_attn.qkv_proj.weight",
        gguf: "attn_qkv.weight",
        shape: ["qkv", "hidden"],
        mix: "attn_q",
      },
      ...ATTN_OUT_MLP.filter((e) => e.role === "o" || e.role === "postNorm"),
      {
        role: "gateUp",
        hf: "mlp.gate_up_proj.weight",
        gguf: "ffn_up.weight",
        shape: ["inter2", "hidden"],
        mix: "ffn_up",
      },
      ...ATTN_OUT_MLP.filter((e) => e.role === "down"),
    ],
  },
  layer: PRE_NORM_SWIGLU,
};
