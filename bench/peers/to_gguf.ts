/**
 * A safetensors checkpoint folder (Llama, Mistral or Qwen2; F16, F32 or BF16) as one GGUF v3
 * file llama.cpp loads: its hyper-parameters under `llama.*` / `qwen2.*`, the tensors under
 * llama.cpp's names, and a synthetic byte-level `gpt2` vocabulary of the model's size (the
 * benchmark feeds token ids, so only the size matters).
 *
 * Matrices keep their dtype; norms and biases are written as F32, as llama.cpp's converter does;
 * llama3 RoPE scaling becomes the `rope_freqs` tensor llama.cpp reads.
 * For Llama, the q and k rows are permuted from HF's rotate-half RoPE layout to llama.cpp's
 * interleaved-pair layout (within each head, HF rows [half][i] become [i][half]); Qwen2 runs
 * with NEOX RoPE in llama.cpp, which is HF's layout, so nothing is permuted.
 *
 *   deno run -A bench/peers/to_gguf.ts DIR OUT.gguf
 */
import {
  GgmlType,
  type GgufMetadata,
  type GgufTensor,
  type GgufValue,
  GgufValueType as T,
  writeGguf,
} from "../../src/model/gguf/writer.ts";
import type { TensorInfo } from "../../src/model/safetensors.ts";
import type { ModelConfig } from "../../src/model/config.ts";
import { ropeInvFreq } from "../../src/model/rope.ts";
import {
  type Checkpoint,
  f32Bytes,
  openCheckpoint,
  permuteRows,
  tensorBytes,
} from "./read_checkpoint.ts";

const DTYPE_TYPE = {
  f32: GgmlType.F32,
  f16: GgmlType.F16,
  bf16: GgmlType.BF16,
} as const;

/** GPT-2's printable stand-ins for the 256 byte values (the byte-level BPE alphabet). */
function byteChars(): string[] {
  const chars: string[] = [];
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) ||
      (b >= 174 && b <= 255);
    chars.push(String.fromCodePoint(printable ? b : 256 + extra++));
  }
  return chars;
}

function vocabulary(ck: Checkpoint): Record<string, GgufValue> {
  const { vocabSize, bosTokenId, eosTokenIds } = ck.config;
  const bytes = vocabSize >= 256 ? byteChars() : [];
  const special = new Set([bosTokenId, ...eosTokenIds]);
  const tokens: string[] = [];
  const types: number[] = [];
  for (let i = 0; i < vocabSize; i++) {
    const b = bytes[i];
    tokens.push(b ?? `<|kiln_${i}|>`);
    types.push(b === undefined && special.has(i) ? 3 : 1); // 3 = control, 1 = normal
  }
  const meta: Record<string, GgufValue> = {
    "tokenizer.ggml.model": { type: T.STRING, value: "gpt2" },
    "tokenizer.ggml.pre": { type: T.STRING, value: "default" },
    "tokenizer.ggml.tokens": {
      type: T.ARRAY,
      itemType: T.STRING,
      value: tokens,
    },
    "tokenizer.ggml.token_type": {
      type: T.ARRAY,
      itemType: T.INT32,
      value: types,
    },
    "tokenizer.ggml.merges": { type: T.ARRAY, itemType: T.STRING, value: [] },
    "tokenizer.ggml.add_bos_token": { type: T.BOOL, value: false },
  };
  if (bosTokenId !== undefined) {
    meta["tokenizer.ggml.bos_token_id"] = { type: T.UINT32, value: bosTokenId };
  }
  if (eosTokenIds[0] !== undefined) {
    meta["tokenizer.ggml.eos_token_id"] = {
      type: T.UINT32,
      value: eosTokenIds[0],
    };
  }
  return meta;
}

/** The metadata llama.cpp reads for a Llama or Qwen2 model. */
export function ggufMetadata(ck: Checkpoint, name: string): GgufMetadata {
  const c = ck.config;
  const arch = c.arch === "qwen2" ? "qwen2" : "llama";
  const meta: Record<string, GgufValue> = {
    "general.architecture": { type: T.STRING, value: arch },
    "general.name": { type: T.STRING, value: name },
    "general.file_type": {
      type: T.UINT32,
      value: c.dtype === "f32" ? 0 : c.dtype === "bf16" ? 32 : 1,
    },
    [`${arch}.vocab_size`]: { type: T.UINT32, value: c.vocabSize },
    [`${arch}.context_length`]: {
      type: T.UINT32,
      value: c.maxPositionEmbeddings,
    },
    [`${arch}.embedding_length`]: { type: T.UINT32, value: c.hiddenSize },
    [`${arch}.block_count`]: { type: T.UINT32, value: c.numLayers },
    [`${arch}.feed_forward_length`]: {
      type: T.UINT32,
      value: c.intermediateSize,
    },
    [`${arch}.attention.head_count`]: { type: T.UINT32, value: c.numHeads },
    [`${arch}.attention.head_count_kv`]: {
      type: T.UINT32,
      value: c.numKvHeads,
    },
    [`${arch}.attention.key_length`]: { type: T.UINT32, value: c.headDim },
    [`${arch}.attention.value_length`]: { type: T.UINT32, value: c.headDim },
    [`${arch}.attention.layer_norm_rms_epsilon`]: {
      type: T.FLOAT32,
      value: c.rmsNormEps,
    },
    [`${arch}.rope.dimension_count`]: { type: T.UINT32, value: c.headDim },
    [`${arch}.rope.freq_base`]: { type: T.FLOAT32, value: c.ropeTheta },
  };
  const s = c.ropeScaling;
  if (s.type === "linear") {
    meta[`${arch}.rope.scaling.type`] = { type: T.STRING, value: "linear" };
    meta[`${arch}.rope.scaling.factor`] = { type: T.FLOAT32, value: s.factor };
  }
  // llama3 scaling travels as the `rope_freqs` tensor (see ggufTensors).
  return { ...meta, ...vocabulary(ck) };
}

/** Row order that turns HF's rotate-half q/k rows into llama.cpp's interleaved pairs. */
export function ropeRowPermutation(heads: number, headDim: number): number[] {
  const half = headDim / 2;
  const perm: number[] = [];
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      perm.push(h * headDim + i, h * headDim + half + i);
    }
  }
  return perm;
}

function tensor(
  name: string,
  t: TensorInfo,
  opts: { f32?: boolean; perm?: number[] } = {},
): GgufTensor {
  const f32 = opts.f32 === true;
  const elems = t.shape.reduce((a, d) => a * d, 1);
  return {
    name,
    shape: t.shape,
    type: f32 ? GgmlType.F32 : DTYPE_TYPE[t.dtype],
    byteLength: f32 ? elems * 4 : t.length,
    data: async () => {
      const bytes = f32 ? await f32Bytes(t) : await tensorBytes(t);
      return opts.perm ? permuteRows(bytes, t.shape[0]!, opts.perm) : bytes;
    },
  };
}

/**
 * llama3 RoPE scaling as llama.cpp takes it: `rope_freqs.weight`, one F32 divisor per frequency
 * (the unscaled inverse frequency over the scaled one).
 */
function ropeFreqs(c: ModelConfig): GgufTensor {
  const plain = ropeInvFreq(c.headDim, c.ropeTheta);
  const scaled = ropeInvFreq(c.headDim, c.ropeTheta, c.ropeScaling);
  const factors = Float32Array.from(plain, (f, i) => f / scaled[i]!);
  const bytes = new Uint8Array(factors.buffer);
  return {
    name: "rope_freqs.weight",
    shape: [factors.length],
    type: GgmlType.F32,
    byteLength: bytes.length,
    data: () => bytes,
  };
}

/** The tensors in llama.cpp's names and layout. */
export function ggufTensors(ck: Checkpoint): GgufTensor[] {
  const { config: c, weights: w } = ck;
  const llama = c.arch !== "qwen2";
  const qPerm = llama ? ropeRowPermutation(c.numHeads, c.headDim) : undefined;
  const kPerm = llama ? ropeRowPermutation(c.numKvHeads, c.headDim) : undefined;
  const p = (perm: number[] | undefined) => (perm ? { perm } : {});
  const out = [tensor("token_embd.weight", w.embed)];
  for (const [i, l] of w.layers.entries()) {
    const b = `blk.${i}.`;
    out.push(
      tensor(`${b}attn_norm.weight`, l.inputNorm, { f32: true }),
      tensor(`${b}attn_q.weight`, l.q, p(qPerm)),
      tensor(`${b}attn_k.weight`, l.k, p(kPerm)),
      tensor(`${b}attn_v.weight`, l.v),
    );
    if (l.qBias) {
      out.push(tensor(`${b}attn_q.bias`, l.qBias, { f32: true, ...p(qPerm) }));
    }
    if (l.kBias) {
      out.push(tensor(`${b}attn_k.bias`, l.kBias, { f32: true, ...p(kPerm) }));
    }
    if (l.vBias) out.push(tensor(`${b}attn_v.bias`, l.vBias, { f32: true }));
    out.push(
      tensor(`${b}attn_output.weight`, l.o),
      tensor(`${b}ffn_norm.weight`, l.postNorm, { f32: true }),
      tensor(`${b}ffn_gate.weight`, l.gate),
      tensor(`${b}ffn_up.weight`, l.up),
      tensor(`${b}ffn_down.weight`, l.down),
    );
  }
  out.push(tensor("output_norm.weight", w.norm, { f32: true }));
  if (c.ropeScaling.type === "llama3") out.push(ropeFreqs(c));
  // Tied embeddings: llama.cpp falls back to token_embd when `output` is absent.
  if (!c.tieWordEmbeddings) out.push(tensor("output.weight", w.lmHead));
  return out;
}

/** Convert the checkpoint in `dir` to a GGUF file at `out`. */
export async function toGguf(dir: string, out: string): Promise<void> {
  const ck = await openCheckpoint(dir);
  const file = await Deno.open(out, {
    write: true,
    create: true,
    truncate: true,
  });
  const writer = file.writable.getWriter(); // closing it closes the file
  await writeGguf(
    (b) => writer.write(b),
    ggufMetadata(ck, dir.split("/").filter(Boolean).pop() ?? "model"),
    ggufTensors(ck),
  );
  await writer.close();
}

if (import.meta.main) {
  const [dir, out] = Deno.args;
  if (!dir || !out) {
    console.error("usage: deno run -A bench/peers/to_gguf.ts DIR OUT.gguf");
    Deno.exit(2);
  }
  await toGguf(dir, out);
  console.error(`wrote ${out}`);
}
