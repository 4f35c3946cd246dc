/**
 * A family's tensor table, as types: each tensor of a layer (or outside the layers, or of an
 * expert) by what it does, its dimensions in config terms, its role in a quantization mix, and
 * one table entry under both naming schemes (`arch.ts` composes them into a description).
 */

/** A checkpoint tensor of one decoder layer, by what it does. */
export type LayerRole =
  | "inputNorm"
  | "q"
  | "k"
  | "v"
  | "o"
  | "qBias"
  | "kBias"
  | "vBias"
  | "qNorm"
  | "kNorm"
  | "postNorm"
  | "gate"
  | "up"
  | "down"
  /** RMSNorm weights of the attention output and of the MLP output, before their residual adds. */
  | "attnOutNorm"
  | "mlpOutNorm"
  /** The router of a mixture-of-experts MLP ([experts, hidden]). */
  | "router"
  /** q, k and v stacked in one tensor ([q; k; v] rows), and gate and up ([gate; up]). */
  | "qkv"
  | "gateUp"
  /** The attention output projection's bias ([hidden]). */
  | "oBias"
  /** One learned logit per query head ([heads], f32) joining each softmax's denominator. */
  | "sinks"
  /** The router's bias ([experts]), added to its logits before the top-k. */
  | "routerBias"
  /**
   * A short-convolution layer's input projection ([3·hidden, hidden]: the B, C and x rows), its
   * depthwise causal convolution ([hidden, convWidth] taps, the last one the current token's) and
   * its output projection ([hidden, hidden]).
   */
  | "convIn"
  | "conv"
  | "convOut"
  /**
   * A Mamba2 layer's tensors: the input projection ([z; x; B; C; dt] rows), the convolution's
   * taps [ssmConv, convWidth] and bias [ssmConv] over x | B | C, the time-step bias and A
   * (−exp(A_log)) [heads, 1], the skip D [heads, 1], the grouped norm's weight
   * [groups, inner / groups] and the output projection [hidden, inner].
   */
  | "ssmIn"
  | "ssmConv"
  | "ssmConvBias"
  | "ssmDtBias"
  | "ssmA"
  | "ssmD"
  | "ssmNorm"
  | "ssmOut"
  /**
   * A gated delta net layer's input projections (Qwen3.5): q | k | v [deltaConv, hidden], the
   * output gate z [deltaInner, hidden], beta's and the decay's logits [vHeads, hidden]. Its conv
   * taps, A (−exp(A_log)), dt bias, per-head norm and output projection take the `ssm*` roles.
   */
  | "deltaQkv"
  | "deltaZ"
  | "deltaBeta"
  | "deltaAlpha";

/**
 * A tensor of one expert of a mixture-of-experts MLP. HF checkpoints hold one tensor per expert
 * (the `hf` name has `{E}` where the expert's index goes); GGUF files stack the experts along a
 * new outermost axis of one tensor (`[experts, ...shape]`).
 */
export type ExpertRole =
  | "gate"
  | "up"
  | "down"
  /** Per-expert biases of the gate and up products ([ffn]) and of down ([hidden]). */
  | "gateBias"
  | "upBias"
  | "downBias";

/** A checkpoint tensor outside the layers. */
export type GlobalRole = "embed" | "norm" | "lmHead";

/**
 * A tensor dimension in config terms: `hidden`, `q` (heads · head_dim), `kv` (kv_heads ·
 * head_dim), `headDim`, `inter` (the MLP width), `vocab`, or the stacked widths `qkv` (q + 2 kv)
 * and `inter2` (2 · inter).
 */
export type Dim =
  | "hidden"
  | "q"
  | "kv"
  | "headDim"
  | "inter"
  | "vocab"
  | "qkv"
  | "inter2"
  /** The experts of a mixture-of-experts MLP, and the width of one expert's MLP. */
  | "experts"
  | "expertInter"
  /** The query heads. */
  | "heads"
  /** Three residual widths (a short-convolution layer's B, C and x rows). */
  | "hidden3"
  /** The taps of a short convolution (`ModelConfig.convWidth`). */
  | "convWidth"
  /**
   * A Mamba2 layer's widths (`ModelConfig.ssm`): its input projection (2·inner + 2·groups·state +
   * heads), its convolution's channels (inner + 2·groups·state), `inner`, the heads, the groups
   * and one group's width (inner / groups); and an axis of size 1.
   */
  | "ssmIn"
  | "ssmConv"
  | "ssmInner"
  | "ssmHeads"
  | "ssmGroups"
  | "ssmGroupWidth"
  | "one"
  /** Twice the query width (a query projection with a gate per head). */
  | "q2"
  /**
   * A gated delta net layer's widths (`ModelConfig.delta`): q | k | v (2·kHeads·kDim +
   * vHeads·vDim), q | k alone, the value width vHeads·vDim, the value heads and one value
   * head's width.
   */
  | "deltaConv"
  | "deltaQk"
  | "deltaInner"
  | "deltaVHeads"
  | "deltaVDim";

/** The role a tensor plays in a GGUF quantization mix (`src/convert/quant_mix.ts`). */
export type MixRole =
  | "embed"
  | "output"
  | "attn_q"
  | "attn_k"
  | "attn_v"
  | "attn_output"
  | "ffn_gate"
  | "ffn_up"
  | "ffn_down"
  /** A recurrent layer's input or output projection: the mix's base type, never promoted. */
  | "recurrent"
  | "vector";

/** One tensor under both names. */
export interface TensorEntry<R extends string> {
  role: R;
  /** HF name; in a layer, after `model.layers.N.` (`self_attn.q_proj.weight`). */
  hf: string;
  /** GGUF name; in a layer, after `blk.N.` (`attn_q.weight`). */
  gguf: string;
  /** HF shape, outermost first. */
  shape: readonly Dim[];
  /**
   * When the tensor exists: always (absent), only with attention biases (`attentionBias`), or
   * only with an LM head of its own (`untiedHead`).
   */
  when?: "attentionBias" | "untiedHead";
  /**
   * The layer kinds whose layers hold the tensor (absent: every layer). A hybrid family's
   * attention tensors name `attention`, its convolution tensors `short_conv`.
   */
  kinds?: readonly LayerKind[];
  /**
   * HF stores the same values in this shape (a depthwise `Conv1d`'s `[channels, 1, taps]`, a
   * vector where GGUF holds `[n, 1]`); the loaded model holds `shape`, as GGUF does.
   */
  hfShape?: readonly Dim[];
  /**
   * HF stores the tensor as part `part` of `parts` equal row blocks of a tensor of shape `of`
   * (Granite 4.0-H's gate and up rows in one `input_linear`); GGUF holds it alone.
   */
  hfRows?: { of: readonly Dim[]; part: number; parts: number };
  /** HF stores `log(-w)` (Mamba's `A_log`): the loaded value is `-exp` of it, as GGUF stores. */
  hfNegExp?: true;
  /**
   * HF orders the value heads of a gated delta net grouped by key head, llama.cpp's files tile
   * them (slot j·kHeads + g holds HF head g·(vHeads / kHeads) + j): along `axis` (0: rows, 1:
   * columns), past `offset` elements, blocks of `unit` are put in GGUF's order at load.
   */
  hfTiledHeads?: { axis: 0 | 1; offset?: Dim; unit: Dim };
  /**
   * Rows are heads of q (or k): when the family's GGUF files store q/k in llama.cpp's
   * interleaved RoPE order (`gguf.interleavedQk`), these rows are permuted there.
   */
  heads?: "q" | "k";
  /** Its role in a quantization mix (default `vector`: kept in F32). */
  mix?: MixRole;
  /**
   * An RMSNorm weight the model multiplies by `1 + w` where HF stores `w` (GGUF stores `1 + w`):
   * HF values are read with the 1 added, so a loaded model holds one convention.
   */
  hfAddOne?: true;
}

/**
 * What one layer of a hybrid family is: an attention layer (the description's `layer` recipe,
 * with a KV cache) or a recurrent one with a fixed-size state per sequence instead.
 */
export type LayerKind = "attention" | "short_conv" | "mamba2" | "delta_net";
