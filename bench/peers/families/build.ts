/**
 * The pieces every family checkpoint is made of (`family_checkpoints.ts`): a seeded Gaussian,
 * float32 tensors in HF layout (row-major, outermost dimension first, as safetensors stores
 * them), the GGUF "variant" llama.cpp runs (architecture, metadata, tensors under llama.cpp's
 * names), and the two file encoders: GGUF through Kiln's writer, safetensors by hand.
 */
import {
  encodeGguf,
  GgmlType,
  type GgufValue,
  GgufValueType as T,
} from "../../../src/convert/writer.ts";

/** A float32 tensor; `shape` is row-major, outermost first (HF and GGUF writer order). */
export interface Tensor {
  shape: readonly number[];
  data: Float32Array;
}

export type Tensors = Map<string, Tensor>;

/** What llama.cpp loads: `meta` keys without the `<arch>.` prefix are the architecture's own. */
export interface Variant {
  arch: string;
  meta: Record<string, GgufValue>;
  tensors: Tensors;
}

/** mulberry32 uniforms through Box-Muller: deterministic N(0, 1) samples. */
export function gaussian(seed: number): () => number {
  let s = seed | 0;
  const uniform = () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
}

export function tensor(
  shape: readonly number[],
  f: (i: number) => number,
): Tensor {
  const n = shape.reduce((a, d) => a * d, 1);
  return { shape, data: Float32Array.from({ length: n }, (_, i) => f(i)) };
}

/** Rows of `parts` (same row length) stacked in order: HF's fused qkv and gate_up layouts. */
export function concatRows(...parts: Tensor[]): Tensor {
  const cols = parts[0]!.shape[1]!;
  const rows = parts.reduce((a, p) => a + p.shape[0]!, 0);
  const data = new Float32Array(rows * cols);
  let at = 0;
  for (const p of parts) {
    data.set(p.data, at);
    at += p.data.length;
  }
  return { shape: [rows, cols], data };
}

/** Stack equal-shaped tensors along a new outermost axis (per-expert matrices -> one 3-D). */
export function stack(parts: Tensor[]): Tensor {
  const t = concatRows(
    ...parts.map((p) => ({ shape: [1, p.data.length], data: p.data })),
  );
  return { shape: [parts.length, ...parts[0]!.shape], data: t.data };
}

export function mapValues(t: Tensor, f: (v: number) => number): Tensor {
  return { shape: t.shape, data: t.data.map(f) };
}

/**
 * HF's rotate-half q/k rows to the interleaved order llama.cpp's NORM rope (llama, granite,
 * smollm3) expects: within each head of `dim` rows, row `2i + j` of the result is row
 * `j * dim/2 + i` of the input (the permutation llama.cpp's converter applies to q_proj and
 * k_proj; a 1-D tensor such as a per-head norm is permuted the same way).
 */
export function interleaveHeads(t: Tensor, heads: number): Tensor {
  const rows = t.shape[0]!;
  const cols = t.shape.length > 1 ? t.data.length / rows : 1;
  const dim = rows / heads, half = dim / 2;
  const out = new Float32Array(t.data.length);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const src = (h * dim + j * half + i) * cols,
          dst = (h * dim + 2 * i + j) * cols;
        out.set(t.data.subarray(src, src + cols), dst);
      }
    }
  }
  return { shape: t.shape, data: out };
}

export const u32 = (value: number): GgufValue => ({ type: T.UINT32, value });
export const f32 = (value: number): GgufValue => ({ type: T.FLOAT32, value });
export const str = (value: string): GgufValue => ({ type: T.STRING, value });
export const bool = (value: boolean): GgufValue => ({ type: T.BOOL, value });

/**
 * A SentencePiece-style (`llama`) vocabulary llama.cpp accepts: `<unk>`, `<s>`, `</s>`, then the
 * 256 byte tokens `<0x00>`..`<0xFF>` (ids 3..258), then `[PADn]` user tokens up to `vocab`.
 * Byte b of a text is id b + 3; no merges, so the tokenizer is only a byte map.
 */
export function tokenizerMeta(vocab: number): Record<string, GgufValue> {
  const tokens = ["<unk>", "<s>", "</s>"];
  const types = [2, 3, 3];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
    types.push(6);
  }
  for (let i = tokens.length; i < vocab; i++) {
    tokens.push(`[PAD${i}]`);
    types.push(4);
  }
  return {
    "tokenizer.ggml.model": str("llama"),
    "tokenizer.ggml.tokens": {
      type: T.ARRAY,
      itemType: T.STRING,
      value: tokens,
    },
    "tokenizer.ggml.scores": {
      type: T.ARRAY,
      itemType: T.FLOAT32,
      value: tokens.map(() => 0),
    },
    "tokenizer.ggml.token_type": {
      type: T.ARRAY,
      itemType: T.INT32,
      value: types,
    },
    "tokenizer.ggml.unknown_token_id": u32(0),
    "tokenizer.ggml.bos_token_id": u32(1),
    "tokenizer.ggml.eos_token_id": u32(2),
    "tokenizer.ggml.add_bos_token": bool(false),
  };
}

/** The GGUF bytes of a variant (all tensors F32), through Kiln's GGUF writer. */
export function encodeVariant(v: Variant, name: string): Promise<Uint8Array> {
  const meta: Record<string, GgufValue> = {
    "general.architecture": str(v.arch),
    "general.name": str(name),
  };
  for (const [k, value] of Object.entries(v.meta)) {
    meta[
      k.startsWith("general.") || k.startsWith("tokenizer.") ? k : `${v.arch}.${k}`
    ] = value;
  }
  const tensors = [...v.tensors].map(([tname, t]) => ({
    name: tname,
    shape: t.shape,
    type: GgmlType.F32,
    byteLength: t.data.byteLength,
    data: () => new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength),
  }));
  return encodeGguf(meta, tensors);
}

/**
 * A safetensors file of F32 tensors, then U8 ones (`bytes`) (header padded to 8 bytes, names in
 * insertion order).
 */
export function encodeSafetensors(
  tensors: Tensors,
  bytes: Map<string, { shape: readonly number[]; data: Uint8Array }> = new Map(),
): Uint8Array {
  const header: Record<string, unknown> = { __metadata__: { format: "pt" } };
  let offset = 0;
  const all = [...tensors, ...bytes];
  for (const [name, t] of all) {
    header[name] = {
      dtype: t.data instanceof Uint8Array ? "U8" : "F32",
      shape: t.shape,
      data_offsets: [offset, offset + t.data.byteLength],
    };
    offset += t.data.byteLength;
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - json.length % 8) % 8);
  const head = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + head.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  let at = 8 + head.length;
  for (const [, t] of all) {
    out.set(
      new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength),
      at,
    );
    at += t.data.byteLength;
  }
  return out;
}
