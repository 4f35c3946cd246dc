/**
 * gpt-oss as a tiny random checkpoint: q/k/v/o biases, one sink logit per query head, a window
 * of 8 on layer 0 (every other layer, as the released models), YaRN RoPE (factor 8 over an
 * original context of 32, so it rescales the frequencies the 50 positions see), a router with a
 * bias picking 2 of 4 experts, and clamped-SwiGLU experts with biases whose gate/up values
 * often pass the clamp (limit 7). The HF folder holds the experts as the released checkpoints
 * do: MXFP4 `_blocks`/`_scales` (U8), gate and up rows interleaved; the GGUF holds them
 * dequantized (exact: MXFP4 values are F32 values), stacked per projection.
 */
import { type Tensor, type Tensors, u32 } from "./build.ts";
import {
  attention,
  baseConfig,
  baseMeta,
  COPY,
  DIMS,
  type Family,
  Gen,
  ggufName,
  type MapEntry,
  type MapOp,
  withMeta,
  withTensors,
} from "./common.ts";
import { f32, str } from "./build.ts";

/** Wider heads than the other fixtures: q is heads · head_dim = 64, not hidden (32). */
const D = { ...DIMS, headDim: 16 };
const H = D.hidden, LAYERS = 2, EXPERTS = 4, USED = 2, FF = 32, WINDOW = 8;
const YARN = {
  factor: 8,
  original: 32,
  betaFast: 32,
  betaSlow: 1,
  theta: 150000,
};

/** A U8 tensor (MXFP4 blocks or scales), row-major. */
export interface ByteTensor {
  shape: readonly number[];
  data: Uint8Array;
}

/** E2M1 values of the 16 codes (sign bit 3), as transformers' MXFP4 table lists them. */
export const E2M1 = [
  0,
  0.5,
  1,
  1.5,
  2,
  3,
  4,
  6,
  -0,
  -0.5,
  -1,
  -1.5,
  -2,
  -3,
  -4,
  -6,
];

/**
 * HF MXFP4 `[experts, rows, cols]` dequantized, keeping rows `first, first + every, ...`:
 * element 2j of a block is byte j's low nibble, 2j + 1 its high one; scale 2^(s - 127).
 */
export function dequantMxfp4(
  blocks: ByteTensor,
  scales: ByteTensor,
  every: number,
  first: number,
): Tensor {
  const [E, R, G] = blocks.shape as [number, number, number];
  const rows = R / every, cols = G * 32;
  const data = new Float32Array(E * rows * cols);
  for (let e = 0; e < E; e++) {
    for (let r = 0; r < rows; r++) {
      const src = e * R + r * every + first;
      for (let g = 0; g < G; g++) {
        const scale = 2 ** (scales.data[src * G + g]! - 127);
        for (let j = 0; j < 16; j++) {
          const byte = blocks.data[(src * G + g) * 16 + j]!;
          const o = (e * rows + r) * cols + g * 32 + 2 * j;
          data[o] = E2M1[byte & 15]! * scale;
          data[o + 1] = E2M1[byte >> 4]! * scale;
        }
      }
    }
  }
  return { shape: [E, rows, cols], data };
}

/** Columns `first, first + every, ...` of each row of a 2-D tensor (HF's interleaved biases). */
export function columns(t: Tensor, every: number, first: number): Tensor {
  const [rows, cols] = t.shape as [number, number];
  const n = cols / every;
  return {
    shape: [rows, n],
    data: Float32Array.from({ length: rows * n }, (_, i) => {
      return t.data[Math.floor(i / n) * cols + (i % n) * every + first]!;
    }),
  };
}

/** Random MXFP4 blocks and scales `[experts, rows, cols/32, (16)]`, exponents in `exps`. */
function mxfp4(
  g: Gen,
  rows: number,
  cols: number,
  exps: readonly number[],
): ByteTensor[] {
  const n = EXPERTS * rows * cols / 32;
  // Uniform bytes from the Gaussian's low bits.
  const u = () => Math.floor(Math.abs(g.normal()) * 1e6) & 255;
  const blocks = Uint8Array.from({ length: n * 16 }, u);
  const scales = Uint8Array.from({ length: n }, () => exps[u() % exps.length]!);
  return [
    { shape: [EXPERTS, rows, cols / 32, 16], data: blocks },
    { shape: [EXPERTS, rows, cols / 32], data: scales },
  ];
}

export function gptOss(): Family {
  const g = new Gen(121),
    hf: Tensors = new Map(),
    bytes = new Map<string, ByteTensor>();
  hf.set("model.embed_tokens.weight", g.embed());
  for (let l = 0; l < LAYERS; l++) {
    const p = `model.layers.${l}.`;
    hf.set(`${p}input_layernorm.weight`, g.norm(H));
    attention(g, p, hf, D);
    for (
      const [n, w] of [["q", D.heads], ["k", D.kvHeads], [
        "v",
        D.kvHeads,
      ]] as const
    ) {
      hf.set(`${p}self_attn.${n}_proj.bias`, g.vec(w * D.headDim, 0, 0.3));
    }
    hf.set(`${p}self_attn.o_proj.bias`, g.vec(H, 0, 0.3));
    hf.set(`${p}self_attn.sinks`, g.vec(D.heads, 2, 1));
    hf.set(`${p}post_attention_layernorm.weight`, g.norm(H));
    hf.set(`${p}mlp.router.weight`, g.mat(EXPERTS, H, 0.5));
    hf.set(`${p}mlp.router.bias`, g.vec(EXPERTS, 0, 1));
    // Gate/up values of a few units: often past the clamp of 7. Down smaller.
    const [gub, gus] = mxfp4(g, 2 * FF, H, [124, 125, 126]);
    const [db, ds] = mxfp4(g, H, FF, [121, 122]);
    bytes.set(`${p}mlp.experts.gate_up_proj_blocks`, gub!);
    bytes.set(`${p}mlp.experts.gate_up_proj_scales`, gus!);
    hf.set(`${p}mlp.experts.gate_up_proj_bias`, g.mat(EXPERTS, 2 * FF, 1));
    bytes.set(`${p}mlp.experts.down_proj_blocks`, db!);
    bytes.set(`${p}mlp.experts.down_proj_scales`, ds!);
    hf.set(`${p}mlp.experts.down_proj_bias`, g.mat(EXPERTS, H, 0.5));
  }
  hf.set("model.norm.weight", g.norm(H));
  hf.set("lm_head.weight", g.mat(D.vocab, H, 1));

  const tensors: Tensors = new Map(), map: MapEntry[] = [];
  const put = (name: string, from: string[], op: MapOp, t: Tensor) => {
    tensors.set(name, t);
    map.push({ gguf: name, hf: from, transform: op });
  };
  for (const [n, t] of hf) {
    const m = /^model\.layers\.(\d+)\.(.+)$/.exec(n);
    const rest = m?.[2];
    if (rest === "self_attn.sinks") {
      put(`blk.${m![1]}.attn_sinks.weight`, [n], COPY, t);
    } else if (rest === "mlp.router.weight") {
      put(`blk.${m![1]}.ffn_gate_inp.weight`, [n], COPY, t);
    } else if (rest === "mlp.router.bias") {
      put(`blk.${m![1]}.ffn_gate_inp.bias`, [n], COPY, t);
    } else if (rest === "mlp.experts.down_proj_bias") {
      put(`blk.${m![1]}.ffn_down_exps.bias`, [n], COPY, t);
    } else if (rest === "mlp.experts.gate_up_proj_bias") {
      for (const [which, first] of [["gate", 0], ["up", 1]] as const) {
        const op: MapOp = { op: "columns", every: 2, first };
        put(
          `blk.${m![1]}.ffn_${which}_exps.bias`,
          [n],
          op,
          columns(t, 2, first),
        );
      }
    } else put(ggufName(n, "post_attention_norm"), [n], COPY, t);
    if (rest === "mlp.router.bias") {
      // Each layer's experts after its router, in llama.cpp's order.
      const p = `model.layers.${m![1]}.mlp.experts.`;
      const parts = (
        name: string,
      ) => [`${p}${name}_blocks`, `${p}${name}_scales`];
      const q = (
        name: string,
      ) => [bytes.get(`${p}${name}_blocks`)!, bytes.get(`${p}${name}_scales`)!];
      for (const [which, first] of [["gate", 0], ["up", 1]] as const) {
        const op: MapOp = { op: "mxfp4_rows", every: 2, first };
        const [b, s] = q("gate_up_proj");
        put(
          `blk.${m![1]}.ffn_${which}_exps.weight`,
          parts("gate_up_proj"),
          op,
          dequantMxfp4(b!, s!, 2, first),
        );
      }
      const [b, s] = q("down_proj");
      const op: MapOp = { op: "mxfp4_rows", every: 1, first: 0 };
      put(
        `blk.${m![1]}.ffn_down_exps.weight`,
        parts("down_proj"),
        op,
        dequantMxfp4(b!, s!, 1, 0),
      );
    }
  }
  const meta = baseMeta(LAYERS, {
    "rope.freq_base": f32(YARN.theta),
    expert_count: u32(EXPERTS),
    expert_used_count: u32(USED),
    expert_feed_forward_length: u32(FF),
    "attention.sliding_window": u32(WINDOW),
    "rope.scaling.type": str("yarn"),
    "rope.scaling.factor": f32(YARN.factor),
    "rope.scaling.original_context_length": u32(YARN.original),
    "rope.scaling.yarn_beta_fast": f32(YARN.betaFast),
    "rope.scaling.yarn_beta_slow": f32(YARN.betaSlow),
  }, D);
  const zero = (re: RegExp) => (v: typeof main) =>
    withTensors(
      v,
      (n, t) => re.test(n) ? { shape: t.shape, data: t.data.map(() => 0) } : t,
    );
  const main = { arch: "gpt-oss", meta, tensors };
  return {
    name: "gpt-oss",
    features: [
      `attention sinks: one learned logit per query head (N(2, 1)) in each softmax's denominator`,
      `sliding window ${WINDOW} on layer 0, layer 1 global (even layers slide)`,
      `YaRN RoPE: theta ${YARN.theta}, factor ${YARN.factor}, original context ${YARN.original}, ` +
      `beta_fast ${YARN.betaFast}, beta_slow ${YARN.betaSlow} (attention factor 0.1 ln 8 + 1)`,
      "q/k/v and o_proj biases; head_dim 16, so q (64) is wider than hidden (32); untied LM head",
      `${EXPERTS} experts, top-${USED} by router logits + router bias, weighted by the softmax ` +
      `over the ${USED} chosen`,
      "experts: clamped SwiGLU (limit 7, alpha 1.702) with gate/up/down biases; MXFP4 in HF",
    ],
    hfConfig: {
      architectures: ["GptOssForCausalLM"],
      model_type: "gpt_oss",
      ...baseConfig(LAYERS, D),
      intermediate_size: FF,
      num_local_experts: EXPERTS,
      num_experts_per_tok: USED,
      experts_per_token: USED,
      rope_theta: YARN.theta,
      rope_scaling: {
        rope_type: "yarn",
        factor: YARN.factor,
        beta_fast: YARN.betaFast,
        beta_slow: YARN.betaSlow,
        original_max_position_embeddings: YARN.original,
      },
      sliding_window: WINDOW,
      layer_types: ["sliding_attention", "full_attention"],
      attention_bias: true,
      swiglu_limit: 7,
      tie_word_embeddings: false,
      quantization_config: {
        quant_method: "mxfp4",
        modules_to_not_convert: [
          "model.layers.*.self_attn",
          "model.layers.*.mlp.router",
          "model.embed_tokens",
          "lm_head",
        ],
      },
    },
    hf,
    hfBytes: bytes,
    quantize: "MXFP4_MOE",
    gguf: main,
    map,
    ablations: [
      {
        feature: "attention_sinks",
        how: "attn_sinks.weight set to -1e4 (exp of it is 0: no sink)",
        variant: (v) =>
          withTensors(
            v,
            (n, t) => /attn_sinks/.test(n) ? { shape: t.shape, data: t.data.map(() => -1e4) } : t,
          ),
      },
      {
        feature: "sliding_window",
        how: "window 4096",
        variant: (v) => withMeta(v, { "attention.sliding_window": u32(4096) }),
      },
      {
        feature: "yarn",
        how: "rope.scaling.* removed (plain RoPE, theta 150000)",
        variant: (v) =>
          withMeta(v, {
            "rope.scaling.type": undefined,
            "rope.scaling.factor": undefined,
            "rope.scaling.original_context_length": undefined,
            "rope.scaling.yarn_beta_fast": undefined,
            "rope.scaling.yarn_beta_slow": undefined,
          }),
      },
      {
        feature: "expert_biases",
        how: "ffn_{gate,up,down}_exps.bias set to 0",
        variant: zero(/_exps\.bias$/),
      },
      {
        feature: "router_bias",
        how: "ffn_gate_inp.bias set to 0",
        variant: zero(/ffn_gate_inp\.bias$/),
      },
    ],
    conventions: [
      "self_attn.sinks -> blk.N.attn_sinks.weight ([heads], F32); o_proj.bias -> attn_output.bias;",
      "post_attention_layernorm -> blk.N.post_attention_norm; mlp.router.{weight,bias} ->",
      "blk.N.ffn_gate_inp.{weight,bias}. HF experts are fused: gate_up_proj_{blocks,scales}",
      "([E, 2*ff, hidden/32, 16] and [E, 2*ff, hidden/32], U8 MXFP4: element 2j the low nibble of",
      "byte j, scale 2^(s-127)) with gate the even rows and up the odd ones -> ffn_gate_exps /",
      "ffn_up_exps ([E, ff, hidden], dequantized here; llama.cpp's converter repacks to GGUF MXFP4,",
      "exponent byte first, element i the low nibble of byte i, i+16 its high one);",
      "down_proj_{blocks,scales} -> ffn_down_exps ([E, hidden, ff]); gate_up_proj_bias [E, 2*ff]",
      "split the same way (even: gate) -> ffn_{gate,up}_exps.bias; down_proj_bias ->",
      "ffn_down_exps.bias. The unquantized HF layout (bf16) is gate_up_proj [E, hidden, 2*ff]",
      "(input-major, interleaved columns) and down_proj [E, ff, hidden]. YaRN: rope_scaling ->",
      "gpt-oss.rope.scaling.{type,factor,original_context_length,yarn_beta_fast,yarn_beta_slow}.",
      "The SwiGLU clamp (swiglu_limit 7) and alpha 1.702 are hard-coded in llama.cpp (no key).",
    ],
  };
}
