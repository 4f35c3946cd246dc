/**
 * Which ggml type each tensor of a converted checkpoint gets, by quantization mix:
 *
 * - `q8_0`, `q4_0`, `q6_k`: every 2-D weight (embedding, projections, LM head) in that type, as
 *   `llama-quantize --pure` does; no tensor is promoted.
 * - `q4_k_m`: llama.cpp's Q4_K_M recipe. Q4_K for the matrices; Q6_K for the LM head (the token
 *   embedding too when the embeddings are tied, since it then is the LM head), and for `attn_v`
 *   and `ffn_down` in the layers llama.cpp's "use more bits" rule picks: the first and last
 *   eighth of the layers, and every third layer in between (layer i of n with
 *   `i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2`, integer division); for `attn_v` of a hybrid
 *   model, i and n count the attention layers only, as llama.cpp counts `attn_v` tensors.
 *
 * Norms and biases (1-D) stay F32. A block type needs whole blocks per row (32 elements for
 * Q8_0/Q4_0/Q4_1/Q5_0/Q5_1, 256 for the K-quants). Rows that do not fit fall back as llama.cpp's
 * quantizer does: Q6_K to Q8_0, Q4_K to Q5_0, IQ4_XS to IQ4_NL; the 32-element types to F16.
 */
import { EngineError } from "../contract/errors.ts";
import { QUANT_FORMATS, type QuantType } from "../gpu/formats/registry.ts";
import type { MixRole } from "../model/arch/mod.ts";

export const GGUF_MIXES = ["q8_0", "q4_0", "q6_k", "q4_k_m"] as const;
export type GgufMix = (typeof GGUF_MIXES)[number];

/** The ggml type names a conversion writes. */
export type GgufTensorType = QuantType | "F32" | "F16" | "BF16";

/** What a tensor is, for the mix rules: the role its family's tensor table gives it. */
export type TensorRole = MixRole;

export interface MixContext {
  numLayers: number;
  /** The LM head shares the token embedding (no `output.weight` is written). */
  tied: boolean;
  /**
   * The layers that hold a tensor of role `attn_v`, in order (a hybrid model's attention layers,
   * and a gated delta net's `attn_qkv`, which llama.cpp files with them): llama.cpp counts those
   * tensors, so its rule takes a layer's rank among them and their count.
   */
  attentionLayers?: readonly number[];
}

/** The mix named `name` (`q8_0`, `q4_0`, `q6_k`, `q4_k_m`); anything else is refused. */
export function parseMix(name: string): GgufMix {
  const mix = GGUF_MIXES.find((m) => m === name.toLowerCase());
  if (mix === undefined) {
    throw EngineError.invalidArgument(
      `unknown quantization type ${JSON.stringify(name)} (${GGUF_MIXES.join(", ")})`,
    );
  }
  return mix;
}

/** llama.cpp's rule for the layers that get more bits in the `_M` mixes. */
export function useMoreBits(layer: number, numLayers: number): boolean {
  const eighth = Math.floor(numLayers / 8);
  return layer < eighth || layer >= Math.floor(7 * numLayers / 8) ||
    (layer - eighth) % 3 === 2;
}

const UNIFORM: Record<Exclude<GgufMix, "q4_k_m">, QuantType> = {
  q8_0: "Q8_0",
  q4_0: "Q4_0",
  q6_k: "Q6_K",
};

/** Each type the mixes write, and the type its rows fall back to; any other goes to F16. */
const FALLBACK: Partial<Record<QuantType, GgufTensorType>> = {
  Q8_0: "F16",
  Q4_0: "F16",
  Q4_1: "F16",
  Q5_0: "F16",
  Q5_1: "F16",
  Q4_K: "Q5_0",
  Q5_K: "Q8_0",
  Q6_K: "Q8_0",
  IQ4_NL: "F16",
  IQ4_XS: "IQ4_NL",
  MXFP4: "F16",
  // llama.cpp's fallback for every 2- and 3-bit 256-element type.
  Q2_K: "Q4_0",
  Q3_K: "Q4_0",
  TQ1_0: "Q4_0",
  TQ2_0: "Q4_0",
};

/** The type the mix wants before the row-length fallback. */
function wanted(mix: GgufMix, role: TensorRole, layer: number, ctx: MixContext): QuantType {
  if (mix !== "q4_k_m") return UNIFORM[mix];
  if (role === "output" || (role === "embed" && ctx.tied)) return "Q6_K";
  if (role === "attn_v") {
    const among = ctx.attentionLayers;
    const [i, n] = among ? [among.indexOf(layer), among.length] : [layer, ctx.numLayers];
    if (useMoreBits(i, n)) return "Q6_K";
  }
  if (role === "ffn_down" && useMoreBits(layer, ctx.numLayers)) return "Q6_K";
  return "Q4_K";
}

/** `type`, or what it falls back to until a row of `cols` elements is whole blocks. */
export function fitRow(type: GgufTensorType, cols: number): GgufTensorType {
  let t = type;
  while (t !== "F32" && t !== "F16" && t !== "BF16" && cols % QUANT_FORMATS[t].blockSize !== 0) {
    t = FALLBACK[t] ?? "F16";
  }
  return t;
}

/**
 * The type of one tensor: `role`, its layer (`-1` outside the layers) and its row length
 * `cols`. Vectors are F32 whatever the mix.
 */
export function mixType(
  mix: GgufMix,
  role: TensorRole,
  layer: number,
  cols: number,
  ctx: MixContext,
): GgufTensorType {
  if (role === "vector") return "F32";
  return fitRow(wanted(mix, role, layer, ctx), cols);
}

/** llama.cpp's `general.file_type` (`llama_ftype`) of a mix. */
export const MIX_FILE_TYPE: Record<GgufMix, number> = {
  q8_0: 7,
  q4_0: 2,
  q6_k: 18,
  q4_k_m: 15,
};
