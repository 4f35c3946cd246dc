/**
 * Test-only: a tiny Llama/Qwen2 GGUF (metadata, tokenizer, tensors) built with the test encoder,
 * and the HF `config.json` of the same model.
 */
import { quantizedBytes, quantTypeOfGgml } from "../../gpu/quant/formats.ts";
import { encodeGguf, T, type TestTensor, typed, type Value } from "./test_encoder.ts";

export interface TinyOptions {
  arch?: "llama" | "qwen2";
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

export function tinyMetadata(o: TinyOptions = {}): Record<string, Value> {
  const arch = o.arch ?? "llama";
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
  const { hidden: h, heads, kvHeads, headDim: d, ffn } = TINY;
  const vocab = (tinyMetadata(o)["tokenizer.ggml.tokens"] as string[]).length;
  const mat = (name: string, cols: number, rows: number, type = 0): TestTensor => ({
    name,
    type,
    dims: [cols, rows],
    data: type === 0
      ? f32(cols * rows)
      : new Uint8Array(quantizedBytes(quantTypeOfGgml(type), cols * rows)),
  });
  const vec = (name: string, n: number): TestTensor => ({
    name,
    type: 0,
    dims: [n],
    data: f32(n, 1),
  });
  const out: TestTensor[] = [mat("token_embd.weight", h, vocab)];
  for (let i = 0; i < (o.layers ?? 2); i++) {
    const p = `blk.${i}.`;
    out.push(
      vec(`${p}attn_norm.weight`, h),
      mat(`${p}attn_q.weight`, h, heads * d, i === 0 ? o.qType ?? 0 : 0),
      mat(`${p}attn_k.weight`, h, kvHeads * d),
      mat(`${p}attn_v.weight`, h, kvHeads * d),
      mat(`${p}attn_output.weight`, heads * d, h),
      vec(`${p}ffn_norm.weight`, h),
      mat(`${p}ffn_gate.weight`, h, ffn),
      mat(`${p}ffn_up.weight`, h, ffn),
      mat(`${p}ffn_down.weight`, ffn, h),
    );
    if (o.arch === "qwen2") {
      out.push(
        vec(`${p}attn_q.bias`, heads * d),
        vec(`${p}attn_k.bias`, kvHeads * d),
        vec(`${p}attn_v.bias`, kvHeads * d),
      );
    }
  }
  out.push(vec("output_norm.weight", h));
  if (!o.tied) out.push(mat("output.weight", h, vocab));
  return out;
}

export function tinyGguf(o: TinyOptions = {}): Uint8Array<ArrayBuffer> {
  return encodeGguf(tinyMetadata(o), tinyTensors(o));
}

/** The HF `config.json` of the same model. */
export function tinyHfConfig(o: TinyOptions = {}): Record<string, unknown> {
  const arch = o.arch ?? "llama";
  return {
    architectures: [arch === "llama" ? "LlamaForCausalLM" : "Qwen2ForCausalLM"],
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
