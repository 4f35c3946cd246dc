/**
 * Qwen3, Gemma 2, Gemma 3, Phi-3 and SmolLM3 as tiny random checkpoints: HF tensors and config,
 * the GGUF llama.cpp loads, and the ablations that prove each feature moves llama.cpp's logits.
 */
import { concatRows, f32, mapValues, type Tensors, u32, type Variant } from "./build.ts";
import {
  attention,
  baseConfig,
  baseMeta,
  COPY,
  DIMS,
  type Family,
  Gen,
  gguf,
  ggufName,
  mlp,
  normRope,
  toGguf,
  withMeta,
  withTensors,
} from "./common.ts";

const H = DIMS.hidden, HD = DIMS.headDim;
/** A soft-cap this large is tanh's identity to float32 precision: the cap turned off. */
const NO_CAP = f32(1e6);
/** A window longer than any sequence here: sliding attention turned off. */
const NO_WINDOW = u32(4096);

const dropping = (re: RegExp) => (v: Variant) =>
  withTensors(v, (n, t) => re.test(n) ? undefined : t);

export function qwen3(): Family {
  const layers = 2, g = new Gen(11), hf: Tensors = new Map();
  hf.set("model.embed_tokens.weight", g.embed());
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}.`;
    hf.set(`${p}input_layernorm.weight`, g.norm(H));
    attention(g, p, hf);
    hf.set(`${p}self_attn.q_norm.weight`, g.norm(HD));
    hf.set(`${p}self_attn.k_norm.weight`, g.norm(HD));
    hf.set(`${p}post_attention_layernorm.weight`, g.norm(H));
    mlp(g, p, hf);
  }
  hf.set("model.norm.weight", g.norm(H));
  return {
    name: "qwen3",
    features: [
      "per-head q/k RMSNorm (weights of head_dim) before RoPE",
      "NEOX RoPE",
      "GQA 4:2",
    ],
    hfConfig: {
      architectures: ["Qwen3ForCausalLM"],
      model_type: "qwen3",
      ...baseConfig(layers),
    },
    hf,
    ...gguf("qwen3", baseMeta(layers), toGguf(hf, (n) => ggufName(n))),
    ablations: [{
      feature: "qk_norm",
      how:
        "the same weights run as llama.cpp's qwen2 (no q/k norm), attn_q_norm/attn_k_norm dropped",
      variant: (m) => dropping(/attn_[qk]_norm/)({ ...m, arch: "qwen2" }),
    }],
    conventions: [
      "HF and GGUF layouts are the same (NEOX RoPE: no q/k permutation); HF names map as llama's,",
      "self_attn.q_norm/k_norm -> blk.N.attn_q_norm/attn_k_norm; embeddings tied (no output.weight).",
    ],
  };
}

/** Gemma's RMSNorm multiplies by (1 + w): HF stores w, GGUF stores 1 + w. */
function gemmaNorms(hf: Tensors): ReturnType<typeof toGguf> {
  return toGguf(
    hf,
    (n) => ggufName(n, "post_attention_norm"),
    (n) => /norm\.weight$/.test(n) ? { op: "plus_one" } : COPY,
  );
}

function gemmaLayer(g: Gen, p: string, hf: Tensors, qkNorm: boolean): void {
  const w = (n: number) => g.vec(n, 0, 0.3);
  hf.set(`${p}input_layernorm.weight`, w(H));
  attention(g, p, hf);
  if (qkNorm) {
    hf.set(`${p}self_attn.q_norm.weight`, w(HD));
    hf.set(`${p}self_attn.k_norm.weight`, w(HD));
  }
  hf.set(`${p}post_attention_layernorm.weight`, w(H));
  hf.set(`${p}pre_feedforward_layernorm.weight`, w(H));
  mlp(g, p, hf);
  hf.set(`${p}post_feedforward_layernorm.weight`, w(H));
}

const GEMMA_CONVENTIONS = [
  "every RMSNorm weight (input/post_attention/pre_feedforward/post_feedforward layernorms, the final",
  "norm, Gemma 3's q_norm/k_norm) is stored as w in HF and as 1 + w in GGUF (the model computes",
  "x_normed * (1 + w)); post_attention_layernorm -> post_attention_norm,",
  "pre_feedforward_layernorm -> ffn_norm, post_feedforward_layernorm -> post_ffw_norm; embeddings",
  "scaled by sqrt(hidden) at input; tied LM head; GELU (tanh approximation); NEOX RoPE (no q/k",
  "permutation); query scale 1/sqrt(query_pre_attn_scalar) = 1/sqrt(head_dim) here.",
  "Sliding window w: a query at p sees keys p-w+1..p (llama.cpp masks p - p0 >= w), the same as HF.",
];

export function gemma2(): Family {
  const layers = 2, g = new Gen(22), hf: Tensors = new Map();
  hf.set("model.embed_tokens.weight", g.embed());
  for (let l = 0; l < layers; l++) {
    gemmaLayer(g, `model.layers.${l}.`, hf, false);
  }
  hf.set("model.norm.weight", g.vec(H, 0, 0.3));
  const attnCap = 2, finalCap = 8;
  const meta = baseMeta(layers, {
    "attention.sliding_window": u32(8),
    "attention.sliding_window_pattern": u32(2),
    attn_logit_softcapping: f32(attnCap),
    final_logit_softcapping: f32(finalCap),
  });
  // Gemma 2 with both caps and the window off: only the post-norms separate it from Gemma 1.
  const plain = (m: Variant) =>
    withMeta(m, {
      attn_logit_softcapping: NO_CAP,
      final_logit_softcapping: NO_CAP,
      "attention.sliding_window": NO_WINDOW,
    });
  return {
    name: "gemma2",
    features: [
      "sliding window 8 on layer 0 (pattern 2: even layers local), global layer 1",
      `attention logit soft-cap ${attnCap}`,
      `final logit soft-cap ${finalCap}`,
      "post-attention and post-FFN RMSNorms (sandwich norms)",
      "(1 + w) RMSNorm weights, sqrt(hidden) embedding scale, GELU-tanh FFN",
    ],
    hfConfig: {
      architectures: ["Gemma2ForCausalLM"],
      model_type: "gemma2",
      ...baseConfig(layers),
      hidden_act: "gelu_pytorch_tanh",
      hidden_activation: "gelu_pytorch_tanh",
      query_pre_attn_scalar: HD,
      sliding_window: 8,
      layer_types: ["sliding_attention", "full_attention"],
      attn_logit_softcapping: attnCap,
      final_logit_softcapping: finalCap,
    },
    hf,
    ...gguf("gemma2", meta, gemmaNorms(hf)),
    ablations: [
      {
        feature: "sliding_window",
        how: "window 4096",
        variant: (m) => withMeta(m, { "attention.sliding_window": NO_WINDOW }),
      },
      {
        feature: "attn_softcap",
        how: "attention soft-cap 1e6",
        variant: (m) => withMeta(m, { attn_logit_softcapping: NO_CAP }),
      },
      {
        feature: "final_softcap",
        how: "final soft-cap 1e6",
        variant: (m) => withMeta(m, { final_logit_softcapping: NO_CAP }),
      },
      {
        feature: "norm_plus_one",
        how: "every norm weight stored as HF's w instead of 1 + w",
        variant: (m) =>
          withTensors(m, (n, t) => /norm\.weight$/.test(n) ? mapValues(t, (v) => v - 1) : t),
      },
      {
        feature: "post_norms",
        how: "llama.cpp's gemma (1) on the same weights less post_attention_norm/post_ffw_norm",
        base: { what: "model.gguf with both soft-caps 1e6 and window 4096", variant: plain },
        variant: (m) => dropping(/post_(attention|ffw)_norm/)({ ...plain(m), arch: "gemma" }),
      },
    ],
    conventions: GEMMA_CONVENTIONS,
  };
}

export function gemma3(): Family {
  const layers = 3, g = new Gen(33), hf: Tensors = new Map();
  hf.set("model.embed_tokens.weight", g.embed());
  for (let l = 0; l < layers; l++) {
    gemmaLayer(g, `model.layers.${l}.`, hf, true);
  }
  hf.set("model.norm.weight", g.vec(H, 0, 0.3));
  const meta = baseMeta(layers, {
    "rope.freq_base": f32(1e6),
    "rope.freq_base_swa": f32(10000),
    "attention.sliding_window": u32(8),
    "attention.sliding_window_pattern": u32(2),
  });
  return {
    name: "gemma3",
    features: [
      "sliding window 8 on layers 0 and 2 (pattern 2), global layer 1",
      "separate RoPE base for local layers (10000) and global layers (1e6)",
      "per-head q/k RMSNorm with (1 + w) weights",
      "post-attention and post-FFN RMSNorms, (1 + w) norms, sqrt(hidden) embedding scale",
    ],
    hfConfig: {
      architectures: ["Gemma3ForCausalLM"],
      model_type: "gemma3_text",
      ...baseConfig(layers),
      hidden_act: "gelu_pytorch_tanh",
      hidden_activation: "gelu_pytorch_tanh",
      query_pre_attn_scalar: HD,
      rope_theta: 1e6,
      rope_local_base_freq: 10000,
      sliding_window: 8,
      sliding_window_pattern: 2,
      layer_types: ["sliding_attention", "full_attention", "sliding_attention"],
      attn_logit_softcapping: null,
      final_logit_softcapping: null,
      rope_scaling: null,
    },
    hf,
    ...gguf("gemma3", meta, gemmaNorms(hf)),
    ablations: [
      {
        feature: "sliding_window",
        how: "window 4096 (local layers keep their RoPE base)",
        variant: (m) => withMeta(m, { "attention.sliding_window": NO_WINDOW }),
      },
      {
        feature: "local_rope_base",
        how: "rope.freq_base_swa = rope.freq_base (1e6)",
        variant: (m) => withMeta(m, { "rope.freq_base_swa": f32(1e6) }),
      },
      {
        feature: "qk_norm",
        how: "llama.cpp's gemma2 (no q/k norm) on the same weights less attn_q_norm/attn_k_norm, " +
          "its soft-caps 1e6",
        variant: (m) =>
          dropping(/attn_[qk]_norm/)(
            withMeta({ ...m, arch: "gemma2" }, {
              attn_logit_softcapping: NO_CAP,
              final_logit_softcapping: NO_CAP,
            }),
          ),
      },
    ],
    conventions: [
      ...GEMMA_CONVENTIONS,
      "Gemma 3: layer i is local when (i + 1) % sliding_window_pattern != 0 (HF) = i % 2 < 1 here",
      "(llama.cpp: il % n_pattern < n_pattern - 1); local layers use rope_local_base_freq",
      "(GGUF rope.freq_base_swa), global layers rope_theta (rope.freq_base).",
    ],
  };
}

export function phi3(): Family {
  const layers = 2, g = new Gen(44), hf: Tensors = new Map();
  hf.set("model.embed_tokens.weight", g.embed());
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}.`;
    hf.set(`${p}input_layernorm.weight`, g.norm(H));
    const parts: Tensors = new Map();
    attention(g, p, parts);
    mlp(g, p, parts);
    const at = (n: string) => parts.get(`${p}${n}.weight`)!;
    hf.set(
      `${p}self_attn.qkv_proj.weight`,
      concatRows(
        at("self_attn.q_proj"),
        at("self_attn.k_proj"),
        at("self_attn.v_proj"),
      ),
    );
    hf.set(`${p}self_attn.o_proj.weight`, at("self_attn.o_proj"));
    hf.set(`${p}post_attention_layernorm.weight`, g.norm(H));
    hf.set(
      `${p}mlp.gate_up_proj.weight`,
      concatRows(at("mlp.gate_proj"), at("mlp.up_proj")),
    );
    hf.set(`${p}mlp.down_proj.weight`, at("mlp.down_proj"));
  }
  hf.set("model.norm.weight", g.norm(H));
  const rot = HD / 2;
  return {
    name: "phi3",
    features: [
      `partial rotary: RoPE on the first ${rot} of ${HD} dims of each head (NEOX halves of those)`,
      "fused qkv_proj ([q; k; v] rows) and gate_up_proj ([gate; up] rows)",
    ],
    hfConfig: {
      architectures: ["Phi3ForCausalLM"],
      model_type: "phi3",
      ...baseConfig(layers),
      partial_rotary_factor: rot / HD,
      original_max_position_embeddings: 256,
      rope_scaling: null,
      sliding_window: null,
    },
    hf,
    ...gguf(
      "phi3",
      baseMeta(layers, { "rope.dimension_count": u32(rot) }),
      toGguf(hf, (n) => ggufName(n)),
    ),
    ablations: [{
      feature: "partial_rotary",
      how: `rope.dimension_count ${HD} (full rotary)`,
      variant: (m) => withMeta(m, { "rope.dimension_count": u32(HD) }),
    }],
    conventions: [
      "self_attn.qkv_proj -> blk.N.attn_qkv (same rows: q, then k, then v); mlp.gate_up_proj ->",
      "blk.N.ffn_up with 2*ff rows (gate first: llama.cpp's SWIGLU takes silu of the first half);",
      "NEOX RoPE over rope.dimension_count = partial_rotary_factor * head_dim dims, no permutation.",
      "llama.cpp ignores Phi-3's sliding_window (it logs that Phi SWA is disabled): none is set here.",
    ],
  };
}

export function smollm3(): Family {
  const layers = 4, g = new Gen(55), hf: Tensors = new Map();
  hf.set("model.embed_tokens.weight", g.embed());
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}.`;
    hf.set(`${p}input_layernorm.weight`, g.norm(H));
    attention(g, p, hf);
    hf.set(`${p}post_attention_layernorm.weight`, g.norm(H));
    mlp(g, p, hf);
  }
  hf.set("model.norm.weight", g.norm(H));
  return {
    name: "smollm3",
    features: [
      "no RoPE on every 4th layer (layer 3 here): NoPE attention",
      "NORM (interleaved) RoPE",
    ],
    hfConfig: {
      architectures: ["SmolLM3ForCausalLM"],
      model_type: "smollm3",
      ...baseConfig(layers),
      no_rope_layers: [1, 1, 1, 0],
      no_rope_layer_interval: 4,
      use_sliding_window: false,
      sliding_window: null,
    },
    hf,
    ...gguf(
      "smollm3",
      baseMeta(layers),
      toGguf(hf, (n) => ggufName(n), normRope()),
    ),
    ablations: [
      {
        feature: "no_rope_layer",
        how: "llama.cpp's llama (RoPE on every layer) on the same file",
        variant: (m) => ({ ...m, arch: "llama" }),
      },
      {
        feature: "qk_interleave",
        how:
          "attn_q/attn_k rows left in HF's rotate-half order (the converter's permutation skipped)",
        variant: (m) =>
          withTensors(m, (n, t) => {
            const hfName = n.replace(
              /^blk\.(\d+)\.attn_([qk])\.weight$/,
              "model.layers.$1.self_attn.$2_proj.weight",
            );
            return hfName === n ? t : hf.get(hfName)!;
          }),
      },
    ],
    conventions: [
      "HF q_proj/k_proj rows are in rotate-half order; GGUF rows are interleaved per head",
      "(GGUF row h*d + 2i + j = HF row h*d + j*d/2 + i), as llama.cpp's converter permutes them.",
      "llama.cpp hard-codes the NoPE step (layer il has no RoPE when (il + 1) % 4 == 0); HF's",
      "no_rope_layers lists 1 (RoPE) / 0 (NoPE) per layer.",
    ],
  };
}
