/**
 * What the family descriptions share: the dimensions, a weight generator with the scales that
 * make every feature bite, HF -> GGUF tensor renaming for the llama-like layer, and small
 * operations on variants (other metadata, other architecture, tensors dropped or changed).
 */
import type { GgufValue } from "../../../src/convert/writer.ts";
import {
  f32,
  gaussian,
  interleaveHeads,
  mapValues,
  stack,
  type Tensor,
  tensor,
  type Tensors,
  tokenizerMeta,
  u32,
  type Variant,
} from "./build.ts";

/** Hidden 32, 4 query heads and 2 KV heads of 8, FFN 32, 259 tokens (3 special + 256 bytes). */
export const DIMS = {
  hidden: 32,
  heads: 4,
  kvHeads: 2,
  headDim: 8,
  ff: 32,
  vocab: 259,
} as const;

/** Dimensions of a checkpoint (`DIMS` unless a family widens one). */
export type Dims = { readonly [K in keyof typeof DIMS]: number };

/** A feature turned off (or changed) in a variant of the checkpoint llama.cpp runs again. */
export interface Ablation {
  feature: string;
  /** How the feature is turned off, in words. */
  how: string;
  variant: (main: Variant) => Variant;
  /** Compare with this variant instead of the main one (isolates one feature of several). */
  base?: { what: string; variant: (main: Variant) => Variant };
}

export interface Family {
  name: string;
  /** The structural features this checkpoint exercises. */
  features: string[];
  hfConfig: Record<string, unknown>;
  /** HF names and layout (what `config.json` describes). */
  hf: Tensors;
  /** HF tensors stored as bytes (U8: MXFP4 blocks and scales), after `hf` in the file. */
  hfBytes?: Map<string, { shape: readonly number[]; data: Uint8Array }>;
  /**
   * A llama.cpp file type (`llama_model_quantize`) the GGUF is also quantized to, with
   * llama.cpp's logits on that file recorded too.
   */
  quantize?: "MXFP4_MOE";
  /** The GGUF llama.cpp runs. */
  gguf: Variant;
  /** How each GGUF tensor is made of HF tensors. */
  map: MapEntry[];
  ablations: Ablation[];
  /** HF <-> GGUF conventions of this family (names, layouts, stored values). */
  conventions: string[];
}

/**
 * Weights with scales chosen so attention is far from uniform and logits are O(5): embeddings
 * N(0, 1), attention matrices N(0, 0.3²), FFN matrices N(0, 0.2²), norm weights 1 + N(0, 0.3²).
 */
export class Gen {
  #g: () => number;
  constructor(seed: number) {
    this.#g = gaussian(seed);
  }
  normal(): number {
    return this.#g();
  }
  mat(rows: number, cols: number, std: number): Tensor {
    return tensor([rows, cols], () => this.#g() * std);
  }
  vec(n: number, mean: number, std: number): Tensor {
    return tensor([n], () => mean + this.#g() * std);
  }
  embed(vocab = DIMS.vocab, hidden = DIMS.hidden): Tensor {
    return this.mat(vocab, hidden, 1);
  }
  norm(n: number): Tensor {
    return this.vec(n, 1, 0.3);
  }
}

/** Attention projections in HF names under `p` (`model.layers.N.`). */
export function attention(g: Gen, p: string, hf: Tensors, d: Dims = DIMS): void {
  hf.set(
    `${p}self_attn.q_proj.weight`,
    g.mat(d.heads * d.headDim, d.hidden, 0.3),
  );
  hf.set(
    `${p}self_attn.k_proj.weight`,
    g.mat(d.kvHeads * d.headDim, d.hidden, 0.3),
  );
  hf.set(
    `${p}self_attn.v_proj.weight`,
    g.mat(d.kvHeads * d.headDim, d.hidden, 0.3),
  );
  hf.set(
    `${p}self_attn.o_proj.weight`,
    g.mat(d.hidden, d.heads * d.headDim, 0.3),
  );
}

/** A gated FFN (gate, up, down) in HF names under `p` + `module`. */
export function mlp(
  g: Gen,
  p: string,
  hf: Tensors,
  ff: number = DIMS.ff,
  module = "mlp.",
  d: Dims = DIMS,
): void {
  hf.set(`${p}${module}gate_proj.weight`, g.mat(ff, d.hidden, 0.2));
  hf.set(`${p}${module}up_proj.weight`, g.mat(ff, d.hidden, 0.2));
  hf.set(`${p}${module}down_proj.weight`, g.mat(d.hidden, ff, 0.2));
}

/** HF -> GGUF names of the llama-like parts (`postAttn`: where post_attention_layernorm goes). */
export function ggufName(hf: string, postAttn = "ffn_norm"): string {
  const top: Record<string, string> = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
  };
  if (top[hf]) return top[hf]!;
  const m = /^model\.layers\.(\d+)\.(.+)\.(weight|bias)$/.exec(hf);
  if (!m) throw new Error(`no GGUF name for ${hf}`);
  const parts: Record<string, string> = {
    "input_layernorm": "attn_norm",
    "post_attention_layernorm": postAttn,
    "pre_feedforward_layernorm": "ffn_norm",
    "post_feedforward_layernorm": "post_ffw_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "self_attn.qkv_proj": "attn_qkv",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
    "mlp.gate_up_proj": "ffn_up",
    "mlp.gate": "ffn_gate_inp",
  };
  const part = parts[m[2]!];
  if (!part) throw new Error(`no GGUF name for ${hf}`);
  return `blk.${m[1]}.${part}.${m[3]}`;
}

/**
 * How one GGUF tensor is made of HF tensors (recorded in each manifest for the Kiln-side
 * converter): `copy` (same bytes), `plus_one` (Gemma norms), `interleave_heads` (NORM RoPE q/k
 * rows, `heads` heads), `stack` (experts along a new outermost axis), `computed` (no HF tensor:
 * derived from config.json, `how` says from what).
 */
export type MapOp =
  | { op: "copy" }
  | { op: "plus_one" }
  | { op: "interleave_heads"; heads: number }
  | { op: "stack" }
  | { op: "computed"; how: string }
  /** HF MXFP4 blocks and scales `[E, rows, cols/32, (16)]`, dequantized, rows first, first + every, ... */
  | { op: "mxfp4_rows"; every: number; first: number }
  /** Columns first, first + every, ... of each row of a 2-D tensor (interleaved biases). */
  | { op: "columns"; every: number; first: number };

export interface MapEntry {
  gguf: string;
  hf: string[];
  transform: MapOp;
}

export const COPY: MapOp = { op: "copy" };

export function applyOp(op: MapOp, parts: Tensor[]): Tensor {
  switch (op.op) {
    case "copy":
      return parts[0]!;
    case "plus_one":
      return mapValues(parts[0]!, (v) => 1 + v);
    case "interleave_heads":
      return interleaveHeads(parts[0]!, op.heads);
    case "stack":
      return stack(parts);
    case "computed":
      throw new Error(`computed tensors have no HF source (${op.how})`);
    case "mxfp4_rows":
    case "columns":
      throw new Error(`${op.op}: built by the family (gptoss.ts)`);
  }
}

/** Every HF tensor renamed (`rename`) and transformed (`opOf`, by HF name), with its map. */
export function toGguf(
  hf: Tensors,
  rename: (name: string) => string,
  opOf: (name: string) => MapOp = () => COPY,
): { tensors: Tensors; map: MapEntry[] } {
  const tensors: Tensors = new Map();
  const map: MapEntry[] = [];
  for (const [n, t] of hf) {
    const op = opOf(n), name = rename(n);
    tensors.set(name, applyOp(op, [t]));
    map.push({ gguf: name, hf: [n], transform: op });
  }
  return { tensors, map };
}

/** q_proj/k_proj rows interleaved per head for llama.cpp's NORM rope (llama, granite, smollm3). */
export function normRope(d: Dims = DIMS): (name: string) => MapOp {
  return (name) => {
    if (name.endsWith("q_proj.weight")) {
      return { op: "interleave_heads", heads: d.heads };
    }
    if (name.endsWith("k_proj.weight")) {
      return { op: "interleave_heads", heads: d.kvHeads };
    }
    return COPY;
  };
}

/** A family's `gguf` and `map` fields from its architecture, metadata and converted tensors. */
export function gguf(
  arch: string,
  meta: Record<string, GgufValue>,
  converted: { tensors: Tensors; map: MapEntry[] },
): { gguf: Variant; map: MapEntry[] } {
  return {
    gguf: { arch, meta, tensors: converted.tensors },
    map: converted.map,
  };
}

/** The metadata every llama-like architecture reads. */
export function baseMeta(
  layers: number,
  extra: Record<string, GgufValue> = {},
  d: Dims = DIMS,
): Record<string, GgufValue> {
  return {
    context_length: u32(256),
    embedding_length: u32(d.hidden),
    block_count: u32(layers),
    feed_forward_length: u32(d.ff),
    "attention.head_count": u32(d.heads),
    "attention.head_count_kv": u32(d.kvHeads),
    "attention.key_length": u32(d.headDim),
    "attention.value_length": u32(d.headDim),
    "attention.layer_norm_rms_epsilon": f32(1e-6),
    "rope.dimension_count": u32(d.headDim),
    "rope.freq_base": f32(10000),
    ...tokenizerMeta(d.vocab),
    ...extra,
  };
}

/** The HF config fields every llama-like family shares. */
export function baseConfig(layers: number, d: Dims = DIMS): Record<string, unknown> {
  return {
    hidden_size: d.hidden,
    intermediate_size: d.ff,
    num_hidden_layers: layers,
    num_attention_heads: d.heads,
    num_key_value_heads: d.kvHeads,
    head_dim: d.headDim,
    vocab_size: d.vocab,
    max_position_embeddings: 256,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    tie_word_embeddings: true,
    torch_dtype: "float32",
    bos_token_id: 1,
    eos_token_id: 2,
    attention_bias: false,
    hidden_act: "silu",
  };
}

/** The variant with some metadata replaced (or removed: `undefined`). */
export function withMeta(
  v: Variant,
  patch: Record<string, GgufValue | undefined>,
): Variant {
  const meta = { ...v.meta };
  for (const [k, value] of Object.entries(patch)) {
    if (value === undefined) delete meta[k];
    else meta[k] = value;
  }
  return { ...v, meta };
}

/** The variant with tensors dropped (`f` returns undefined) or replaced. */
export function withTensors(
  v: Variant,
  f: (name: string, t: Tensor) => Tensor | undefined,
): Variant {
  const tensors: Tensors = new Map();
  for (const [n, t] of v.tensors) {
    const out = f(n, t);
    if (out) tensors.set(n, out);
  }
  return { ...v, tensors };
}

/** Norm weights matching `re` set to 1 (the normalization stays, its learned scale goes). */
export function unitWeights(v: Variant, re: RegExp): Variant {
  return withTensors(
    v,
    (n, t) => re.test(n) ? { shape: t.shape, data: t.data.map(() => 1) } : t,
  );
}
