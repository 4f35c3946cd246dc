/**
 * How the shared HF `config.json` reader (`src/model/config.ts`) treats the keys a family reads
 * differently: part of a family's description (`ArchDescription.hf.config`).
 */

/** How the shared HF `config.json` reader treats the keys families read differently. */
export interface HfConfigRules {
  /** q/k/v biases: always present, or as `attention_bias` says (default false). */
  attentionBias: "always" | "attention_bias";
  /**
   * Sliding-window attention is on when `use_sliding_window` is true (`flag`), or whenever
   * `sliding_window` is set (`when_set`); or never (`ignored`: llama.cpp runs the family
   * without one, whatever its config says).
   */
  slidingWindow: "flag" | "when_set" | "ignored";
  /**
   * Which layers the window applies to when the config lists no `layer_types` and no
   * `sliding_window_pattern`: with pattern p, layer i when i % p < p - 1 (absent: every layer).
   */
  windowPattern?: number;
  /**
   * The LM head is the embedding when `tie_word_embeddings` is absent (transformers omits it from
   * a saved config.json when it equals PretrainedConfig's default, true).
   */
  tiedByDefault?: true;
  /**
   * Keys the family names its own way: the RMSNorm epsilon (default `rms_norm_eps`), the tied
   * head (read before `tie_word_embeddings` when present) and the MLP width (default
   * `intermediate_size`).
   */
  keys?: { rmsNormEps?: string; tieWordEmbeddings?: string; intermediateSize?: string };
  /**
   * `position_embedding_type` is read: `"nope"` leaves every layer without RoPE (Granite 4.0-H),
   * `"rope"` (or absent) rotates them.
   */
  positionEmbeddingType?: true;
  /** A key that must be 0 or absent: the family's mixture-of-experts variant is not described. */
  noExperts?: string;
  /** Keys whose value the family's layer assumes (when present): any other is refused. */
  fixed?: Readonly<Record<string, unknown>>;
  /**
   * The MLP width is `block_ff_dim` (else `intermediate_size`), taken to 2/3 of itself, times
   * `block_ffn_dim_multiplier` and rounded up to `block_multiple_of` when
   * `block_auto_adjust_ff_dim` is true (LFM2's configs; llama.cpp's converter does the same).
   */
  blockFfDim?: true;
  /** The activation `hidden_act` / `hidden_activation` must name (default `silu`). */
  act?: "gelu_pytorch_tanh";
  /**
   * Some layers skip RoPE: those `no_rope_layers` marks 0 (one 1/0 per layer), or without it
   * every `no_rope_layer_interval`-th (the 4th, 8th, ... for an interval of 4; default
   * `defaultInterval`).
   */
  noRope?: { defaultInterval: number };
  /**
   * `embedding_multiplier`, `residual_multiplier`, `attention_multiplier` and `logits_scaling`
   * are read (`ModelConfig.embeddingScale` ...).
   */
  multipliers?: boolean;
  /**
   * Mixture-of-experts keys where the family names them its own way: the expert count (default
   * `num_experts`) and width (default `moe_intermediate_size`); `normTopK`: the top-k weights
   * are always renormalised (no `norm_topk_prob`).
   */
  experts?: { count: string; width: string; normTopK?: true };
  /**
   * `quantization_config` with `quant_method: "mxfp4"` is accepted: the experts are stored as
   * MXFP4 `_blocks`/`_scales` (see `ArchDescription.fusedExperts`).
   */
  mxfp4?: true;
}
