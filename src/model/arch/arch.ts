/**
 * What one model family is, as data: its names in HF configs and GGUF files, its tensors under
 * both naming schemes, the family rules the shared config readers apply, and its decoder layer
 * as a list of steps. The loaders, the converter, the GPU plan and the float64 reference all
 * read a description; none of them names a family (`test/arch_names_test.ts` checks that).
 */

import type { HfConfigRules } from "./hf_rules.ts";
import type { ExpertRole, GlobalRole, LayerKind, LayerRole, TensorEntry } from "./tensor_entry.ts";

export type { HfConfigRules } from "./hf_rules.ts";
export type * from "./tensor_entry.ts";

/** The gated MLP's activation: SiLU (SwiGLU) or tanh-approximated GELU (GeGLU). */
export type Activation = "silu" | "gelu_tanh";

/**
 * A mixture-of-experts MLP's activation: SwiGLU (`silu`: silu(g) · u), or the clamped SwiGLU
 * `swiglu_oai`: g = min(g, limit), u = clamp(u, -limit, limit), out = (u + 1) · g · σ(1.702 · g),
 * with limit the config's `moe.swigluLimit`.
 */
export type ExpertActivation = "silu" | "swiglu_oai";

/**
 * One step of a decoder layer. The residual stream is `x`; each step reads what the ones before
 * it wrote. A later family adds a step kind (a post-norm after attention, soft-capped scores, a
 * window) or a variant (`act`), and both compilers learn it: a step compiler in
 * `src/runtime/steps/` (the table `STEP_COMPILERS`) and a reference step in
 * `src/reference/layer.ts`; a step either does not know is a type error there.
 */
export type LayerStep =
  /**
   * RMSNorm(x) with `inputNorm`, then the q/k/v products (with their biases when present). With
   * `gatedQuery`, `q` holds each head's query then its output gate (2·head_dim rows a head), kept
   * apart for `attention_gate`.
   */
  | { op: "attn_norm_qkv"; gatedQuery?: boolean }
  /** The attention output times sigmoid of the gate `attn_norm_qkv` kept (`gatedQuery`). */
  | { op: "attention_gate" }
  /**
   * A gated delta net layer (Qwen3.5): n = RMSNorm(x) with `inputNorm`; q | k | v = n ·
   * `deltaQkv`ᵀ through the causal conv (`ssmConv`, no bias) and SiLU, with its state; q and k
   * L2-normed per key head; beta = sigmoid(n · `deltaBeta`ᵀ); decay g = softplus(n ·
   * `deltaAlpha`ᵀ + `ssmDtBias`) · `ssmA`; the delta rule per value head with its state
   * (`ModelConfig.delta.headMap` says which key head a value head reads); o = RMSNorm per value
   * head (`ssmNorm`) ⊙ silu(n · `deltaZ`ᵀ); x += o · `ssmOut`ᵀ.
   */
  | { op: "delta_net" }
  /**
   * An RMSNorm of q and of k before RoPE: per head (weights `qNorm`, `kNorm` [head_dim]), or with
   * `width: "projection"` over each token's whole q (and k) projection (weights [q], [kv]).
   */
  | { op: "qk_norm"; width?: "head" | "projection" }
  /** Rotate-half RoPE on q and k with the config's frequencies; k and v enter the KV cache. */
  | { op: "rope" }
  /**
   * Causal grouped-query attention over the cache, scaled by 1/sqrt(head_dim) (or the config's
   * `attnScale`), soft-capped and windowed as the config says (`attention_knobs.ts`). With
   * `sinks`, each head's learned logit (`sinks`) joins its softmax as one more column whose value
   * is dropped: it only enlarges the denominator.
   */
  | { op: "attention"; sinks?: boolean }
  /**
   * x += attention output · `o`ᵀ (+ `oBias` when the layer has one); with `postNorm`,
   * x += RMSNorm(that) with `attnOutNorm`.
   */
  | { op: "o_proj_residual"; postNorm?: boolean }
  /**
   * x += down(act(gate(RMSNorm(x))) · up(RMSNorm(x))), the norm with `postNorm` (none with
   * `preNorm: false`); with `postNorm: true`, the branch is RMSNorm'd with `mlpOutNorm` before
   * the add.
   */
  | { op: "mlp"; act: Activation; preNorm?: boolean; postNorm?: boolean }
  /**
   * A mixture-of-experts MLP: n = RMSNorm(x) with `postNorm`; the router's softmax over
   * n · `router`ᵀ picks the config's top-k experts (weights renormalised to sum 1 when
   * `moe.normTopK`); x += Σ weight_e · down_e(act(gate_e(n)) · up_e(n)) over those experts.
   * With `biases`, the router adds `routerBias` to its logits and each expert's products add
   * `gateBias`, `upBias`, `downBias`. `act: "swiglu_oai"` is the clamped SwiGLU
   * (`ExpertActivation`).
   */
  | { op: "moe_mlp"; act: ExpertActivation; biases?: boolean }
  /** The q/k/v products of x itself, no input norm (with their biases when present). */
  | { op: "qkv" }
  /**
   * A gated short convolution (LFM2): n = RMSNorm(x) with `inputNorm`; B | C | u = n · `convIn`ᵀ;
   * y = C ⊙ conv(B ⊙ u), the convolution causal and depthwise over the sequence (`conv`: each
   * channel's `convWidth` taps, the last on the current token; positions before 0 hold zeros),
   * so each sequence keeps its last `convWidth - 1` values of B ⊙ u as recurrent state;
   * x += y · `convOut`ᵀ.
   */
  | { op: "short_conv" }
  /**
   * A Mamba2 layer: n = RMSNorm(x) with `inputNorm`; z | xBC | dt = n · `ssmIn`ᵀ; xBC =
   * silu(conv(xBC) + `ssmConvBias`) (causal, depthwise, `ssmConv`'s taps, state per sequence);
   * the selective scan over x (heads of inner / heads channels) with B, C per group, dt =
   * softplus(dt + `ssmDtBias`), decay exp(dt·`ssmA`), state per sequence; y += x·`ssmD`;
   * y = RMSNorm per group (`ssmNorm`) of y ⊙ silu(z); x += y · `ssmOut`ᵀ.
   */
  | { op: "mamba2" };

/**
 * How a hybrid family says which layers are which (`ArchDescription.kinds`): each kind's recipe,
 * and where the kinds are read: in GGUF files, a layer whose entry of the per-layer
 * `attention.head_count_kv` array is 0 is of kind `ggufZeroKvHeads`; in HF configs, `hfKey`
 * lists one name per layer, mapped by `hfNames`.
 */
export interface LayerKinds {
  recipes: { readonly [K in Exclude<LayerKind, "attention">]?: readonly LayerStep[] };
  /**
   * GGUF files mark the recurrent layers (of this kind) by 0 KV heads in the per-layer
   * `attention.head_count_kv` array, or (`flags`) by llama.cpp's `attention.recurrent_layers`
   * booleans, else by `full_attention_interval` (every n-th layer attention, default 4).
   */
  ggufZeroKvHeads: Exclude<LayerKind, "attention">;
  ggufMarks?: "zero_kv_heads" | "flags";
  hfKey: string;
  hfNames: Readonly<Record<string, LayerKind>>;
  /** The short convolution's taps: the HF key and the GGUF key (after `<arch>.`). */
  convWidth?: { hf: string; gguf: string };
  /**
   * A Mamba2 kind's sizes in HF configs: the keys of the heads, one head's width, the state,
   * the groups (GGUF files use llama.cpp's `ssm.*` keys).
   */
  ssmHf?: {
    heads: string;
    headDim: string;
    state: string;
    groups: string;
    /** Keys that must say the convolution has a bias and the projections none. */
    convBias: string;
    projBias: string;
  };
  /** A gated delta net kind's sizes in HF configs (GGUF files use llama.cpp's `ssm.*` keys). */
  deltaHf?: { kHeads: string; kDim: string; vHeads: string; vDim: string };
}

/**
 * HF checkpoints that hold each layer's experts fused rather than one tensor per expert, under
 * `model.layers.N.` + these names: `gateUp` is `[experts, hidden, 2·ffn]` (input-major, gate
 * and up interleaved along the last axis: gate the even columns) with `gateUp_bias`
 * `[experts, 2·ffn]` (interleaved too); `down` is `[experts, ffn, hidden]` with `down_bias`
 * `[experts, hidden]`. MXFP4 checkpoints hold `<name>_blocks` `[experts, rows, cols/32, 16]`
 * and `<name>_scales` `[experts, rows, cols/32]` (rows already `[out, in]`, gate/up rows
 * interleaved) instead of the matrices. The loader splits them into the experts table's
 * per-expert names (`fused_experts.ts`).
 */
export interface FusedExperts {
  gateUp: string;
  down: string;
}

/** A model family. */
export interface ArchDescription {
  /** `ModelConfig.arch`: the family's own name. */
  name: string;
  hf: {
    /** `architectures[0]` values of its `config.json`. */
    architectures: readonly string[];
    /** `model_type` values, read when `architectures` is absent. */
    modelTypes: readonly string[];
    config: HfConfigRules;
  };
  gguf: {
    /** `general.architecture` values read as this family (their keys are `<value>.*`). */
    architectures: readonly string[];
    /** The `general.architecture` a conversion writes. */
    write: string;
    /**
     * q/k rows (`heads` entries) are stored in llama.cpp's interleaved-pair RoPE order rather
     * than HF's rotate-half order.
     */
    interleavedQk: boolean;
    /** q/k/v biases: always present, or when the file holds `blk.0.attn_q.bias`. */
    attentionBias: "always" | "tensors";
    /** A `rope_freqs.weight` tensor carries Llama 3 RoPE scaling (otherwise it is ignored). */
    ropeFreqs: boolean;
    /**
     * Block counts at which a file without `attention.scale` scales queries by
     * 1/sqrt(hidden / heads) rather than 1/sqrt(head_dim): llama.cpp's rule for the models whose
     * `query_pre_attn_scalar` is not head_dim (Gemma's 27B sizes), which their files do not say.
     */
    hiddenPerHeadScaleAt?: readonly number[];
    /**
     * Mixture-of-experts families: whether llama.cpp renormalises the top-k router weights when
     * the file has no `<arch>.expert_weights_norm` key.
     */
    expertWeightsNorm?: boolean;
    /** Every this-many-th layer skips RoPE, as llama.cpp hard-codes for the family (no key). */
    noRopeInterval?: number;
    /** `embedding_scale`, `residual_scale`, `attention.scale` and `logit_scale` are read. */
    multipliers?: boolean;
    /** `attention.sliding_window` is ignored, as llama.cpp ignores it for the family. */
    ignoresSlidingWindow?: boolean;
    /** The clamp of `swiglu_oai` experts, which llama.cpp hard-codes for the family (no key). */
    swigluLimit?: number;
    /**
     * `rope.scaling.finetuned` switches RoPE (llama.cpp's Granite hybrids): false leaves every
     * layer without it.
     */
    ropeFinetunedSwitch?: true;
  };
  tensors: {
    global: readonly TensorEntry<GlobalRole>[];
    layer: readonly TensorEntry<LayerRole>[];
    /** Mixture-of-experts families: each expert's tensors (see {@linkcode ExpertRole}). */
    experts?: readonly TensorEntry<ExpertRole>[];
  };
  /** The decoder layer, in order. */
  layer: readonly LayerStep[];
  /** Embeddings enter the residual stream multiplied by sqrt(hidden). */
  scaleEmbedding?: true;
  /** HF checkpoints fuse each layer's experts (see {@linkcode FusedExperts}). */
  fusedExperts?: FusedExperts;
  /** A hybrid family: layers of other kinds beside attention (see {@linkcode LayerKinds}). */
  kinds?: LayerKinds;
}
