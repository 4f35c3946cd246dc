/**
 * OLMo 2, OLMo 3, Granite, Qwen3-MoE and Llama 3 (llama3 RoPE scaling) as tiny random checkpoints,
 * with the ablations that prove each feature moves llama.cpp's logits.
 */
import { GgufValueType } from "../../../src/convert/writer.ts";
import { f32, type Tensors, u32 } from "./build.ts";
import {
  applyOp,
  attention,
  baseConfig,
  baseMeta,
  COPY,
  DIMS,
  type Family,
  Gen,
  gguf,
  ggufName,
  type MapEntry,
  mlp,
  normRope,
  toGguf,
  unitWeights,
  withMeta,
  withTensors,
} from "./common.ts";

const H = DIMS.hidden, HD = DIMS.headDim;

/** OLMo 2's weights: no pre-norms, whole-projection q/k norms, post-norms, untied head. */
function olmoWeights(seed: number, layers: number): Tensors {
  const g = new Gen(seed), hf: Tensors = new Map();
  hf.set("model.embed_tokens.weight", g.embed());
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}.`;
    attention(g, p, hf);
    hf.set(`${p}self_attn.q_norm.weight`, g.norm(DIMS.heads * HD));
    hf.set(`${p}self_attn.k_norm.weight`, g.norm(DIMS.kvHeads * HD));
    hf.set(`${p}post_attention_layernorm.weight`, g.norm(H));
    mlp(g, p, hf);
    hf.set(`${p}post_feedforward_layernorm.weight`, g.norm(H));
  }
  hf.set("model.norm.weight", g.norm(H));
  hf.set("lm_head.weight", g.mat(DIMS.vocab, H, 1));
  return hf;
}

const OLMO_CONVENTIONS = [
  "self_attn.q_norm/k_norm (whole-projection widths) -> blk.N.attn_q_norm/attn_k_norm;",
  "post_attention_layernorm -> blk.N.post_attention_norm, post_feedforward_layernorm ->",
  "blk.N.post_ffw_norm; there is no input_layernorm/attn_norm or ffn_norm; lm_head -> output;",
  "NEOX RoPE, no permutation.",
];

export function olmo2(): Family {
  const layers = 2, hf = olmoWeights(66, layers);
  return {
    name: "olmo2",
    features: [
      "q/k RMSNorm over the whole projection (q: heads*head_dim = 32 weights, k: kv_heads*head_dim = 16), before RoPE",
      "no pre-norms: RMSNorm after attention and after the FFN, then the residual add",
      "untied LM head",
    ],
    hfConfig: {
      architectures: ["Olmo2ForCausalLM"],
      model_type: "olmo2",
      ...baseConfig(layers),
      tie_word_embeddings: false,
    },
    hf,
    ...gguf("olmo2", baseMeta(layers), toGguf(hf, (n) => ggufName(n, "post_attention_norm"))),
    ablations: [
      {
        feature: "qk_norm_weights",
        how: "attn_q_norm/attn_k_norm weights set to 1 (llama.cpp has no OLMo 2 without q/k norm)",
        variant: (m) => unitWeights(m, /attn_[qk]_norm/),
      },
      {
        feature: "post_norm_weights",
        how: "post_attention_norm/post_ffw_norm weights set to 1",
        variant: (m) => unitWeights(m, /post_(attention|ffw)_norm/),
      },
    ],
    conventions: OLMO_CONVENTIONS,
  };
}

/** OLMo 3: OLMo 2's layer with a sliding window on some layers (llama.cpp's olmo2 runs it). */
export function olmo3(): Family {
  const layers = 2, hf = olmoWeights(67, layers);
  const local = [true, false];
  const meta = baseMeta(layers, {
    "attention.sliding_window": u32(8),
    "attention.sliding_window_pattern": {
      type: GgufValueType.ARRAY,
      itemType: GgufValueType.BOOL,
      value: local,
    },
  });
  return {
    name: "olmo3",
    features: [
      "sliding window 8 on layer 0, global layer 1 (per-layer pattern as a GGUF bool array)",
      "OLMo 2's layer: whole-projection q/k norms, post-norms only, untied LM head",
    ],
    hfConfig: {
      architectures: ["Olmo3ForCausalLM"],
      model_type: "olmo3",
      ...baseConfig(layers),
      tie_word_embeddings: false,
      sliding_window: 8,
      layer_types: local.map((l) => l ? "sliding_attention" : "full_attention"),
    },
    hf,
    ...gguf("olmo2", meta, toGguf(hf, (n) => ggufName(n, "post_attention_norm"))),
    ablations: [{
      feature: "sliding_window",
      how: "window 4096",
      variant: (m) => withMeta(m, { "attention.sliding_window": u32(4096) }),
    }],
    conventions: [
      ...OLMO_CONVENTIONS,
      "GGUF architecture olmo2 (llama.cpp has no olmo3); HF sliding_window -> olmo2.attention.",
      "sliding_window, HF layer_types -> olmo2.attention.sliding_window_pattern, one bool per",
      "layer (true: sliding). Without layer_types OLMo 3 slides on every layer but each 4th.",
    ],
  };
}

export function granite(): Family {
  const layers = 2, g = new Gen(77), hf: Tensors = new Map();
  hf.set("model.embed_tokens.weight", g.embed());
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}.`;
    hf.set(`${p}input_layernorm.weight`, g.norm(H));
    attention(g, p, hf);
    hf.set(`${p}post_attention_layernorm.weight`, g.norm(H));
    mlp(g, p, hf);
  }
  hf.set("model.norm.weight", g.norm(H));
  const emb = 4, resid = 0.5, attn = 1 / HD, logits = 2;
  return {
    name: "granite",
    features: [
      `embedding multiplier ${emb}`,
      `residual multiplier ${resid} (both branches)`,
      `attention multiplier ${attn} (instead of 1/sqrt(head_dim))`,
      `logits divided by ${logits}`,
      "NORM (interleaved) RoPE",
    ],
    hfConfig: {
      architectures: ["GraniteForCausalLM"],
      model_type: "granite",
      ...baseConfig(layers),
      embedding_multiplier: emb,
      residual_multiplier: resid,
      attention_multiplier: attn,
      logits_scaling: logits,
    },
    hf,
    ...gguf(
      "granite",
      baseMeta(layers, {
        embedding_scale: f32(emb),
        residual_scale: f32(resid),
        "attention.scale": f32(attn),
        logit_scale: f32(logits),
      }),
      toGguf(hf, (n) => ggufName(n), normRope()),
    ),
    ablations: [
      {
        feature: "embedding_multiplier",
        how: "embedding_scale removed",
        variant: (m) => withMeta(m, { embedding_scale: undefined }),
      },
      {
        feature: "residual_multiplier",
        how: "residual_scale removed",
        variant: (m) => withMeta(m, { residual_scale: undefined }),
      },
      {
        feature: "attention_multiplier",
        how: "attention.scale removed (1/sqrt(head_dim))",
        variant: (m) => withMeta(m, { "attention.scale": undefined }),
      },
      {
        feature: "logits_scaling",
        how: "logit_scale 1",
        variant: (m) => withMeta(m, { logit_scale: f32(1) }),
      },
    ],
    conventions: [
      "HF embedding_multiplier, residual_multiplier, attention_multiplier, logits_scaling ->",
      "GGUF granite.embedding_scale, residual_scale, attention.scale, logit_scale (logits are",
      "divided by it); q_proj/k_proj rows interleaved per head as for llama (NORM RoPE).",
    ],
  };
}

export function qwen3moe(): Family {
  const layers = 2, experts = 4, used = 2, ffe = 32;
  const g = new Gen(88), hf: Tensors = new Map();
  hf.set("model.embed_tokens.weight", g.embed());
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}.`;
    hf.set(`${p}input_layernorm.weight`, g.norm(H));
    attention(g, p, hf);
    hf.set(`${p}self_attn.q_norm.weight`, g.norm(HD));
    hf.set(`${p}self_attn.k_norm.weight`, g.norm(HD));
    hf.set(`${p}post_attention_layernorm.weight`, g.norm(H));
    hf.set(`${p}mlp.gate.weight`, g.mat(experts, H, 0.5));
    for (let e = 0; e < experts; e++) {
      mlp(g, `${p}mlp.experts.${e}.`, hf, ffe, "");
    }
  }
  hf.set("model.norm.weight", g.norm(H));
  // GGUF: each layer's experts stacked into one 3-D tensor per projection.
  const tensors: Tensors = new Map();
  const map: MapEntry[] = [];
  for (const [n, t] of hf) {
    const m = /^model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(\w+)_proj\.weight$/
      .exec(n);
    if (!m) {
      tensors.set(ggufName(n), t);
      map.push({ gguf: ggufName(n), hf: [n], transform: COPY });
      continue;
    }
    if (m[2] !== "0") continue;
    const names = Array.from(
      { length: experts },
      (_, e) => `model.layers.${m[1]}.mlp.experts.${e}.${m[3]}_proj.weight`,
    );
    const name = `blk.${m[1]}.ffn_${m[3]}_exps.weight`;
    tensors.set(name, applyOp({ op: "stack" }, names.map((x) => hf.get(x)!)));
    map.push({ gguf: name, hf: names, transform: { op: "stack" } });
  }
  return {
    name: "qwen3moe",
    features: [
      `${experts} experts, top-${used} routing (softmax over all, then the top ${used} renormalized)`,
      "per-head q/k RMSNorm",
    ],
    hfConfig: {
      architectures: ["Qwen3MoeForCausalLM"],
      model_type: "qwen3_moe",
      ...baseConfig(layers),
      num_experts: experts,
      num_experts_per_tok: used,
      moe_intermediate_size: ffe,
      norm_topk_prob: true,
      decoder_sparse_step: 1,
      mlp_only_layers: [],
      output_router_logits: false,
    },
    hf,
    ...gguf(
      "qwen3moe",
      baseMeta(layers, {
        expert_count: u32(experts),
        expert_used_count: u32(used),
        expert_feed_forward_length: u32(ffe),
      }),
      { tensors, map },
    ),
    ablations: [
      {
        feature: "top_k",
        how: `expert_used_count ${experts} (every expert, softmax weights)`,
        variant: (m) => withMeta(m, { expert_used_count: u32(experts) }),
      },
      {
        feature: "qk_norm_weights",
        how: "attn_q_norm/attn_k_norm weights set to 1",
        variant: (m) => unitWeights(m, /attn_[qk]_norm/),
      },
    ],
    conventions: [
      "mlp.gate -> blk.N.ffn_gate_inp ([experts, hidden]); mlp.experts.E.{gate,up,down}_proj ->",
      "blk.N.ffn_{gate,up,down}_exps, expert E at index E of the outermost axis ([experts, ffe,",
      "hidden] for gate/up, [experts, hidden, ffe] for down); llama.cpp always renormalizes the",
      "top-k weights (HF norm_topk_prob = true).",
    ],
  };
}

/**
 * Llama 3's RoPE frequency factors (what llama.cpp stores as `rope_freqs.weight`): each rotary
 * frequency is divided by its factor. Long wavelengths are slowed by `factor`, short ones kept,
 * the band between interpolated.
 */
export function llama3RopeFactors(
  headDim: number,
  base: number,
  s: { factor: number; low: number; high: number; original: number },
): number[] {
  const out: number[] = [];
  for (let i = 0; i < headDim / 2; i++) {
    const freq = Math.pow(base, -2 * i / headDim);
    const wavelen = 2 * Math.PI / freq;
    let scaled: number;
    if (wavelen < s.original / s.high) scaled = freq;
    else if (wavelen > s.original / s.low) scaled = freq / s.factor;
    else {
      const smooth = (s.original / wavelen - s.low) / (s.high - s.low);
      scaled = (1 - smooth) * freq / s.factor + smooth * freq;
    }
    out.push(freq / scaled);
  }
  return out;
}

export function llama3(): Family {
  const layers = 2, g = new Gen(99), hf: Tensors = new Map();
  hf.set("model.embed_tokens.weight", g.embed());
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}.`;
    hf.set(`${p}input_layernorm.weight`, g.norm(H));
    attention(g, p, hf);
    hf.set(`${p}post_attention_layernorm.weight`, g.norm(H));
    mlp(g, p, hf);
  }
  hf.set("model.norm.weight", g.norm(H));
  const scaling = { factor: 8, low: 1, high: 4, original: 16 };
  const factors = llama3RopeFactors(HD, 10000, scaling);
  const { tensors, map } = toGguf(hf, (n) => ggufName(n), normRope());
  tensors.set("rope_freqs.weight", {
    shape: [HD / 2],
    data: Float32Array.from(factors),
  });
  map.push({
    gguf: "rope_freqs.weight",
    hf: [],
    transform: {
      op: "computed",
      how: "config.json rope_scaling (llama3) and rope_theta",
    },
  });
  return {
    name: "llama3",
    features: [
      `llama3 RoPE scaling (factor ${scaling.factor}, low ${scaling.low}, high ${scaling.high}, ` +
      `original context ${scaling.original}): frequency factors [${
        factors.map((f) => f.toPrecision(4))
      }]`,
      "NORM (interleaved) RoPE",
    ],
    hfConfig: {
      architectures: ["LlamaForCausalLM"],
      model_type: "llama",
      ...baseConfig(layers),
      rope_scaling: {
        rope_type: "llama3",
        factor: scaling.factor,
        low_freq_factor: scaling.low,
        high_freq_factor: scaling.high,
        original_max_position_embeddings: scaling.original,
      },
    },
    hf,
    ...gguf("llama", baseMeta(layers), { tensors, map }),
    ablations: [{
      feature: "llama3_rope_scaling",
      how: "rope_freqs.weight dropped (plain RoPE)",
      variant: (m) => withTensors(m, (n, t) => n === "rope_freqs.weight" ? undefined : t),
    }],
    conventions: [
      "HF rope_scaling {rope_type: llama3, ...} -> GGUF tensor rope_freqs.weight ([head_dim/2]",
      "factors; llama.cpp divides each rotary frequency by its factor); no HF tensor holds it.",
      "q_proj/k_proj rows interleaved per head (NORM RoPE), as llama.cpp's converter permutes them.",
    ],
  };
}
