/**
 * Test-only: a tiny GGUF of any family `arch/` describes (metadata, tokenizer, the family's
 * tensors) built with the test encoder, and the HF `config.json` of the same model.
 */
import { quantizedBytes, quantTypeOfGgml } from "../../gpu/formats/registry.ts";
import { ARCHS, globalTensors, layerTensors, type ShapeConfig } from "../arch/mod.ts";
import {
  encodeGguf,
  T,
  type TestTensor,
  typed,
  type Value,
} from "../../formats/gguf/test_encoder.ts";

export interface TinyOptions {
  /** The family (`ModelConfig.arch`; default `llama`). */
  arch?: string;
  tied?: boolean;
  /** ggml type of `blk.0.attn_q.weight` (default F32; a block type of 32 elements, zero blocks). */
  qType?: number;
  layers?: number;
}

export const TINY = { hidden: 32, heads: 4, kvHeads: 2, headDim: 8, ffn: 64, ctx: 128 };

/** A SentencePiece-style vocabulary: specials, bytes, then pieces by descending score. */
export const SPM_PIECES = [
  "▁",
  "h",
  "e",
  "l",
  "o",
  "w",
  "r",
  "d",
  "he",
  "ll",
  "llo",
  "▁he",
  "▁hello",
  "▁w",
  "or",
  "▁wor",
  "▁world",
  "ld",
];

export function spmVocab(): Record<string, Value> {
  const tokens = ["<unk>", "<s>", "</s>"];
  const types = [2, 3, 3];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
    types.push(6);
  }
  const base = tokens.length;
  tokens.push(...SPM_PIECES);
  SPM_PIECES.forEach(() => types.push(1));
  const scores = tokens.map((_, i) => (i < base ? 0 : -(i - base)));
  return {
    "tokenizer.ggml.model": "llama",
    "tokenizer.ggml.tokens": tokens,
    "tokenizer.ggml.scores": typed(T.ARRAY, scores, T.F32),
    "tokenizer.ggml.token_type": typed(T.ARRAY, types, T.I32),
    "tokenizer.ggml.bos_token_id": 1,
    "tokenizer.ggml.eos_token_id": 2,
    "tokenizer.ggml.unknown_token_id": 0,
    "tokenizer.ggml.add_bos_token": true,
  };
}

function family(o: TinyOptions) {
  const a = ARCHS.get(o.arch ?? "llama");
  if (a === undefined) throw new Error(`no family ${o.arch}`);
  return a;
}

export function tinyMetadata(o: TinyOptions = {}): Record<string, Value> {
  const arch = family(o).gguf.architectures[0]!;
  const vocab = spmVocab();
  return {
    "general.architecture": arch,
    "general.alignment": 32,
    "general.file_type": 0,
    [`${arch}.context_length`]: TINY.ctx,
    [`${arch}.embedding_length`]: TINY.hidden,
    [`${arch}.block_count`]: o.layers ?? 2,
    [`${arch}.feed_forward_length`]: TINY.ffn,
    [`${arch}.attention.head_count`]: TINY.heads,
    [`${arch}.attention.head_count_kv`]: TINY.kvHeads,
    [`${arch}.rope.freq_base`]: typed(T.F32, 10000),
    [`${arch}.attention.layer_norm_rms_epsilon`]: typed(T.F32, 1e-5),
    [`${arch}.vocab_size`]: (vocab["tokenizer.ggml.tokens"] as string[]).length,
    ...vocab,
    "tokenizer.chat_template": "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}",
  };
}

const f32 = (n: number, fill = 0) => new Uint8Array(new Float32Array(n).fill(fill).buffer);
export function tinyTensors(o: TinyOptions = {}): TestTensor[] {
  const a = family(o);
  const vocab = (tinyMetadata(o)["tokenizer.ggml.tokens"] as string[]).length;
  const c: ShapeConfig = {
    hiddenSize: TINY.hidden,
    intermediateSize: TINY.ffn,
    numLayers: o.layers ?? 2,
    numHeads: TINY.heads,
    numKvHeads: TINY.kvHeads,
    headDim: TINY.headDim,
    vocabSize: vocab,
    attentionBias: a.gguf.attentionBias === "always",
    tieWordEmbeddings: o.tied === true,
  };
  const tensor = (name: string, shape: number[], type = 0): TestTensor => {
    const n = shape.reduce((x, y) => x * y, 1);
    return {
      name,
      type,
      // ggml order: innermost first.
      dims: [...shape].reverse(),
      // Vectors (norms, biases) of ones, matrices of zeros.
      data: type !== 0
        ? new Uint8Array(quantizedBytes(quantTypeOfGgml(type), n))
        : f32(n, shape.length === 1 ? 1 : 0),
    };
  };
  const [embed, ...rest] = globalTensors(a, c);
  const out: TestTensor[] = [tensor(embed!.gguf, embed!.shape)];
  for (let i = 0; i < c.numLayers; i++) {
    for (const r of layerTensors(a, c, i)) {
      const qType = i === 0 && r.entry.role === "q" ? o.qType ?? 0 : 0;
      out.push(tensor(r.gguf, r.shape, qType));
    }
  }
  for (const r of rest) out.push(tensor(r.gguf, r.shape));
  return out;
}

export function tinyGguf(o: TinyOptions = {}): Uint8Array<ArrayBuffer> {
  return encodeGguf(tinyMetadata(o), tinyTensors(o));
}

/** The HF `config.json` of the same model. */
export function tinyHfConfig(o: TinyOptions = {}): Record<string, unknown> {
  return {
    architectures: [family(o).hf.architectures[0]],
    vocab_size: (tinyMetadata(o)["tokenizer.ggml.tokens"] as string[]).length,
    hidden_size: TINY.hidden,
    intermediate_size: TINY.ffn,
    num_hidden_layers: o.layers ?? 2,
    num_attention_heads: TINY.heads,
    num_key_value_heads: TINY.kvHeads,
    max_position_embeddings: TINY.ctx,
    rms_norm_eps: 1e-5,
    rope_theta: 10000,
    tie_word_embeddings: o.tied === true,
    bos_token_id: 1,
    eos_token_id: 2,
    torch_dtype: "float32",
  };
}
