/**
 * A float64 forward pass over an HF folder of these fixtures (config.json + F32 tensors under HF
 * names), written from the transformers configs' meaning, not from llama.cpp: it checks that each
 * HF folder describes the model llama.cpp ran, and measures how far llama.cpp's float32 logits
 * are from exact arithmetic (the Gemma GELU is where llama.cpp's CPU build rounds: it looks the
 * activation up in an F16 table). Only the features these fixtures use are implemented.
 */
type Config = Record<string, unknown>;
type Weights = (name: string) => Float64Array;

const num = (c: Config, k: string, d?: number): number => {
  const v = c[k];
  if (typeof v === "number") return v;
  if (d === undefined) throw new Error(`config.json: no ${k}`);
  return d;
};

function rmsNorm(x: Float64Array, w: Float64Array | undefined, eps: number, plusOne: boolean) {
  let ss = 0;
  for (const v of x) ss += v * v;
  const r = 1 / Math.sqrt(ss / x.length + eps);
  return x.map((v, i) => v * r * (w === undefined ? 1 : plusOne ? 1 + w[i]! : w[i]!));
}

/** y = W x for W of `rows` x x.length, row-major (from row `from`). */
function matvec(w: Float64Array, x: Float64Array, rows: number, from = 0): Float64Array {
  const n = x.length, y = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = 0;
    const o = (from + r) * n;
    for (let i = 0; i < n; i++) s += w[o + i]! * x[i]!;
    y[r] = s;
  }
  return y;
}

const silu = (v: number) => v / (1 + Math.exp(-v));
const geluTanh = (v: number) =>
  0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v * v * v)));

/** Llama 3's scaled inverse frequencies (transformers' `rope_type: llama3`). */
function llama3InvFreq(inv: number[], s: Config): number[] {
  const factor = num(s, "factor"), low = num(s, "low_freq_factor");
  const high = num(s, "high_freq_factor"), orig = num(s, "original_max_position_embeddings");
  return inv.map((f) => {
    const wavelen = 2 * Math.PI / f;
    if (wavelen < orig / high) return f;
    if (wavelen > orig / low) return f / factor;
    const smooth = (orig / wavelen - low) / (high - low);
    return (1 - smooth) * f / factor + smooth * f;
  });
}

/**
 * YaRN's inverse frequencies (transformers' `rope_type: yarn`, `truncate` true): each blends
 * the interpolated (divided by `factor`) and the original one by a linear ramp between the
 * dimensions that turn `beta_fast` and `beta_slow` times over the original context.
 */
function yarnInvFreq(inv: number[], s: Config, base: number, dim: number): number[] {
  const factor = num(s, "factor"), orig = num(s, "original_max_position_embeddings");
  const corr = (turns: number) =>
    dim * Math.log(orig / (turns * 2 * Math.PI)) / (2 * Math.log(base));
  const low = Math.max(Math.floor(corr(num(s, "beta_fast", 32))), 0);
  const high = Math.min(Math.ceil(corr(num(s, "beta_slow", 1))), dim - 1);
  return inv.map((f, i) => {
    const ramp = Math.min(1, Math.max(0, (i - low) / (high === low ? 0.001 : high - low)));
    const extrapolation = 1 - ramp;
    return f / factor * (1 - extrapolation) + f * extrapolation;
  });
}

/** YaRN's cos/sin scale: `attention_factor`, else 0.1 ln(factor) + 1. */
function ropeScale(config: Config): number {
  const s = config.rope_scaling as Config | null | undefined;
  if (s?.rope_type !== "yarn") return 1;
  return num(s, "attention_factor", 0.1 * Math.log(num(s, "factor")) + 1);
}

/** Rotate-half RoPE on the first `rot` dims of one head vector at `pos`, cos/sin times `m`. */
function rope(x: Float64Array, at: number, rot: number, inv: number[], pos: number, m = 1): void {
  const half = rot / 2;
  for (let i = 0; i < half; i++) {
    const a = pos * inv[i]!, c = Math.cos(a) * m, s = Math.sin(a) * m;
    const x0 = x[at + i]!, x1 = x[at + i + half]!;
    x[at + i] = x0 * c - x1 * s;
    x[at + i + half] = x1 * c + x0 * s;
  }
}

/** Logits (one row per position) of the HF model `config` with tensors `w` on `tokens`. */
export function referenceLogits(config: Config, w: Weights, tokens: number[]): Float64Array[] {
  const type = config.model_type as string;
  const gemma = type === "gemma2" || type === "gemma3_text";
  const olmo = type === "olmo2" || type === "olmo3";
  const H = num(config, "hidden_size"), L = num(config, "num_hidden_layers");
  const nh = num(config, "num_attention_heads"), nkv = num(config, "num_key_value_heads");
  const hd = num(config, "head_dim", H / nh), V = num(config, "vocab_size");
  const eps = num(config, "rms_norm_eps");
  const rot = Math.round(hd * num(config, "partial_rotary_factor", 1));
  const layerTypes = (config.layer_types as string[] | undefined) ?? [];
  const invFreq = (base: number) => {
    const inv = Array.from({ length: rot / 2 }, (_, i) => Math.pow(base, -2 * i / rot));
    const s = config.rope_scaling as Config | null | undefined;
    if (s?.rope_type === "yarn") return yarnInvFreq(inv, s, base, rot);
    return s?.rope_type === "llama3" ? llama3InvFreq(inv, s) : inv;
  };
  const globalInv = invFreq(num(config, "rope_theta"));
  const mscale = ropeScale(config);
  const oss = type === "gpt_oss";
  const localInv = invFreq(num(config, "rope_local_base_freq", num(config, "rope_theta")));
  const scale = gemma
    ? 1 / Math.sqrt(num(config, "query_pre_attn_scalar"))
    : num(config, "attention_multiplier", 1 / Math.sqrt(hd));
  const resid = num(config, "residual_multiplier", 1);
  const embed = w("model.embed_tokens.weight");
  const norm = (x: Float64Array, name: string) => rmsNorm(x, w(name), eps, gemma);
  const embScale = gemma ? Math.sqrt(H) : num(config, "embedding_multiplier", 1);
  let xs = tokens.map((t) => embed.slice(t * H, (t + 1) * H).map((v) => v * embScale));
  for (let l = 0; l < L; l++) {
    const p = `model.layers.${l}.`;
    const local = layerTypes[l] === "sliding_attention";
    const window = local ? num(config, "sliding_window") : Infinity;
    const inv = local ? localInv : globalInv;
    const noRope = (config.no_rope_layers as number[] | undefined)?.[l] === 0;
    const qs: Float64Array[] = [], ks: Float64Array[] = [], vs: Float64Array[] = [];
    for (const [pos, x] of xs.entries()) {
      const h = olmo ? x : norm(x, `${p}input_layernorm.weight`);
      let q: Float64Array, k: Float64Array, v: Float64Array;
      if (type === "phi3") {
        const qkv = w(`${p}self_attn.qkv_proj.weight`);
        q = matvec(qkv, h, nh * hd);
        k = matvec(qkv, h, nkv * hd, nh * hd);
        v = matvec(qkv, h, nkv * hd, (nh + nkv) * hd);
      } else {
        q = matvec(w(`${p}self_attn.q_proj.weight`), h, nh * hd);
        k = matvec(w(`${p}self_attn.k_proj.weight`), h, nkv * hd);
        v = matvec(w(`${p}self_attn.v_proj.weight`), h, nkv * hd);
        if (config.attention_bias === true) {
          q = addBias(q, w(`${p}self_attn.q_proj.bias`));
          k = addBias(k, w(`${p}self_attn.k_proj.bias`));
          v = addBias(v, w(`${p}self_attn.v_proj.bias`));
        }
      }
      if (olmo) {
        q = norm(q, `${p}self_attn.q_norm.weight`);
        k = norm(k, `${p}self_attn.k_norm.weight`);
      } else if (type === "qwen3" || type === "qwen3_moe" || type === "gemma3_text") {
        const perHead = (t: Float64Array, n: number, name: string) => {
          for (let i = 0; i < n; i++) t.set(norm(t.slice(i * hd, (i + 1) * hd), name), i * hd);
        };
        perHead(q, nh, `${p}self_attn.q_norm.weight`);
        perHead(k, nkv, `${p}self_attn.k_norm.weight`);
      }
      if (!noRope) {
        for (let i = 0; i < nh; i++) rope(q, i * hd, rot, inv, pos, mscale);
        for (let i = 0; i < nkv; i++) rope(k, i * hd, rot, inv, pos, mscale);
      }
      qs.push(q), ks.push(k), vs.push(v);
    }
    const cap = num(config, "attn_logit_softcapping", 0) || 0;
    xs = xs.map((x, pos) => {
      const att = new Float64Array(nh * hd);
      for (let i = 0; i < nh; i++) {
        const g = Math.floor(i / (nh / nkv));
        const scores: number[] = [];
        for (let j = 0; j <= pos; j++) {
          let s = 0;
          for (let d = 0; d < hd; d++) s += qs[pos]![i * hd + d]! * ks[j]![g * hd + d]!;
          s *= scale;
          if (cap) s = Math.tanh(s / cap) * cap;
          scores.push(pos - j < window ? s : -Infinity);
        }
        // gpt-oss: the head's sink logit joins the softmax; its column is dropped.
        const sink = oss ? w(`${p}self_attn.sinks`)[i]! : -Infinity;
        const m = Math.max(...scores, sink);
        const e = scores.map((s) => Math.exp(s - m));
        const z = e.reduce((a, b) => a + b, Math.exp(sink - m));
        for (let j = 0; j <= pos; j++) {
          for (let d = 0; d < hd; d++) {
            att[i * hd + d] = att[i * hd + d]! + e[j]! / z * vs[j]![g * hd + d]!;
          }
        }
      }
      let o = matvec(w(`${p}self_attn.o_proj.weight`), att, H);
      if (oss && config.attention_bias === true) o = addBias(o, w(`${p}self_attn.o_proj.bias`));
      if (gemma || olmo) o = norm(o, `${p}post_attention_layernorm.weight`);
      const x1 = x.map((v, i) => v + resid * o[i]!);
      const h = olmo
        ? x1
        : norm(x1, `${p}${gemma ? "pre_feedforward" : "post_attention"}_layernorm.weight`);
      let f = ffn(config, w, p, h, gemma ? geluTanh : silu);
      if (gemma || olmo) f = norm(f, `${p}post_feedforward_layernorm.weight`);
      return x1.map((v, i) => v + resid * f[i]!);
    });
  }
  const head = config.tie_word_embeddings ? embed : w("lm_head.weight");
  const finalCap = num(config, "final_logit_softcapping", 0) || 0;
  const div = num(config, "logits_scaling", 1);
  return xs.map((x) => {
    const y = matvec(head, norm(x, "model.norm.weight"), V).map((v) => v / div);
    return finalCap ? y.map((v) => Math.tanh(v / finalCap) * finalCap) : y;
  });
}

const addBias = (y: Float64Array, b: Float64Array) => y.map((v, i) => v + b[i]!);

/** transformers' MXFP4 values: codes 0..7 positive, 8..15 their negatives. */
const FP4 = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6];

/**
 * Expert `e`'s `[rows, cols]` matrix of HF MXFP4 `<name>_blocks` / `_scales` (given as byte
 * values): element 2j of a 32-block is byte j's low nibble, 2j + 1 its high one, times
 * 2^(scale - 127).
 */
function mxfp4Expert(
  w: Weights,
  name: string,
  e: number,
  rows: number,
  cols: number,
) {
  const blocks = w(`${name}_blocks`),
    scales = w(`${name}_scales`),
    g = cols / 32;
  const out = new Float64Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    for (let b = 0; b < g; b++) {
      const at = (e * rows + r) * g + b, scale = 2 ** (scales[at]! - 127);
      for (let j = 0; j < 16; j++) {
        const byte = blocks[at * 16 + j]!;
        out[r * cols + b * 32 + 2 * j] = FP4[byte & 15]! * scale;
        out[r * cols + b * 32 + 2 * j + 1] = FP4[byte >> 4]! * scale;
      }
    }
  }
  return out;
}

/**
 * gpt-oss's MoE: router logits plus bias, the top k softmaxed among themselves; each expert
 * gate_up = W h + b (gate the even outputs, up the odd), gate clamped above and up both sides
 * at `swiglu_limit`, (up + 1) · gate · σ(1.702 · gate), then down + bias.
 */
function gptOssMoe(
  config: Config,
  w: Weights,
  p: string,
  h: Float64Array,
): Float64Array {
  const H = h.length,
    E = num(config, "num_local_experts"),
    k = num(config, "num_experts_per_tok");
  const ff = num(config, "intermediate_size"),
    limit = num(config, "swiglu_limit");
  const logits = addBias(
    matvec(w(`${p}mlp.router.weight`), h, E),
    w(`${p}mlp.router.bias`),
  );
  const top = [...logits.keys()].sort((a, b) => logits[b]! - logits[a]! || a - b).slice(0, k);
  const m = Math.max(...top.map((i) => logits[i]!));
  const z = top.reduce((a, i) => a + Math.exp(logits[i]! - m), 0);
  const out = new Float64Array(H);
  const guBias = w(`${p}mlp.experts.gate_up_proj_bias`),
    dBias = w(`${p}mlp.experts.down_proj_bias`);
  for (const e of top) {
    const gu = mxfp4Expert(w, `${p}mlp.experts.gate_up_proj`, e, 2 * ff, H);
    const y = matvec(gu, h, 2 * ff).map((v, r) => v + guBias[e * 2 * ff + r]!);
    const act = new Float64Array(ff).map((_, r) => {
      const g = Math.min(y[2 * r]!, limit),
        u = Math.min(Math.max(y[2 * r + 1]!, -limit), limit);
      return (u + 1) * g / (1 + Math.exp(-1.702 * g));
    });
    const d = matvec(
      mxfp4Expert(w, `${p}mlp.experts.down_proj`, e, H, ff),
      act,
      H,
    );
    const weight = Math.exp(logits[e]! - m) / z;
    for (let i = 0; i < H; i++) {
      out[i] = out[i]! + weight * (d[i]! + dBias[e * H + i]!);
    }
  }
  return out;
}

function ffn(
  config: Config,
  w: Weights,
  p: string,
  h: Float64Array,
  act: (v: number) => number,
): Float64Array {
  const H = h.length;
  const glu = (prefix: string, ff: number) => {
    const g = matvec(w(`${prefix}gate_proj.weight`), h, ff);
    const u = matvec(w(`${prefix}up_proj.weight`), h, ff);
    return matvec(w(`${prefix}down_proj.weight`), g.map((v, i) => act(v) * u[i]!), H);
  };
  if (config.model_type === "phi3") {
    const ff = num(config, "intermediate_size"), gu = w(`${p}mlp.gate_up_proj.weight`);
    const g = matvec(gu, h, ff), u = matvec(gu, h, ff, ff);
    return matvec(w(`${p}mlp.down_proj.weight`), g.map((v, i) => act(v) * u[i]!), H);
  }
  if (config.model_type === "gpt_oss") return gptOssMoe(config, w, p, h);
  if (config.model_type !== "qwen3_moe") return glu(`${p}mlp.`, num(config, "intermediate_size"));
  const E = num(config, "num_experts"), k = num(config, "num_experts_per_tok");
  const logits = matvec(w(`${p}mlp.gate.weight`), h, E);
  const m = Math.max(...logits), e = logits.map((v) => Math.exp(v - m));
  const z = e.reduce((a, b) => a + b, 0);
  const top = [...e.keys()].sort((a, b) => e[b]! - e[a]!).slice(0, k);
  const sum = config.norm_topk_prob ? top.reduce((a, i) => a + e[i]!, 0) : z;
  const out = new Float64Array(H);
  for (const i of top) {
    const y = glu(`${p}mlp.experts.${i}.`, num(config, "moe_intermediate_size"));
    for (let d = 0; d < H; d++) out[d] = out[d]! + e[i]! / sum * y[d]!;
  }
  return out;
}
