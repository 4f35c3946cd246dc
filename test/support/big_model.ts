/**
 * Test-only: a random-weight GGUF of Llama-3.2-3B's real shape at llama.cpp's Q4_K_M mix (about
 * 2 GB: 28 layers, hidden 3072, FFN 8192, 24 heads, 8 KV heads of 128, vocabulary 128,256, tied
 * embeddings), written to disk tensor by tensor in chunks of a few MB (never the file in memory),
 * into the ignored `.cache/big-model/`. A file already there is reused when its size and the
 * stored hash of the generator's parameters (`<file>.params`) match.
 *
 * The weights are random blocks with chosen scales, so that a forward pass stays finite and
 * modest: Q4_K with `d` in [1, 2)·1e-4 (normal f16, never subnormal: backends may flush those
 * differently) and `dmin = 7.5·d`, which centres `d·sc·q − dmin·m` near zero (|w| ≲ 0.1); Q6_K
 * with `d` in [1, 2)·2e-4 and scales 1..8 (|w| ≤ 0.13). Norm weights are ones. The vocabulary is
 * the converter's synthetic byte-level one (ids 0-255 bytes, the rest named control/unused).
 *
 * `deno run -A test/support/big_model.ts` makes (or reuses) the file and prints one JSON line:
 * `{ path, bytes, reused, seconds }`.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { numberToF16 } from "../../src/gpu/dtype.ts";
import { QUANT_FORMATS } from "../../src/gpu/formats/registry.ts";
import { ARCHS, globalTensors, layerTensors, type ShapeConfig } from "../../src/model/arch/mod.ts";
import { type GgufTensorType, MIX_FILE_TYPE, mixType } from "../../src/convert/quant_mix.ts";
import { tokenizerMetadata } from "../../src/convert/tokenizer_meta.ts";
import {
  GgmlType,
  ggufLayout,
  type GgufTensorSpec,
  type GgufValue,
  GgufValueType as T,
} from "../../src/convert/writer.ts";

/** The shape and everything else the file depends on (hashed into `<file>.params`). */
export const BIG_MODEL = {
  generator: 1,
  family: "llama",
  hidden: 3072,
  ffn: 8192,
  layers: 28,
  heads: 24,
  kvHeads: 8,
  headDim: 128,
  vocab: 128256,
  bos: 128000,
  eos: 128001,
  ropeTheta: 500000,
  context: 8192,
  mix: "q4_k_m",
  seed: 0x3b3b,
} as const;

export const BIG_MODEL_PATH = new URL("../../.cache/big-model/llama-3b-q4km.gguf", import.meta.url)
  .pathname;

/** The fixed prompt (token ids) the browser test and the Deno reference both run. */
export const BIG_PROMPT = [128000, 72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100];

interface Planned extends GgufTensorSpec {
  tType: GgufTensorType;
}

function plan(): { meta: Record<string, GgufValue>; tensors: Planned[] } {
  const m = BIG_MODEL;
  const arch = ARCHS.get(m.family)!;
  const c: ShapeConfig = {
    hiddenSize: m.hidden,
    intermediateSize: m.ffn,
    numLayers: m.layers,
    numHeads: m.heads,
    numKvHeads: m.kvHeads,
    headDim: m.headDim,
    vocabSize: m.vocab,
    attentionBias: false,
    tieWordEmbeddings: true,
  };
  const ctx = { numLayers: m.layers, tied: true };
  const tensors: Planned[] = [];
  const add = (r: { gguf: string; shape: number[]; layer: number; entry: { mix?: string } }) => {
    const cols = r.shape[r.shape.length - 1]!;
    const role = (r.entry.mix ?? "vector") as Parameters<typeof mixType>[1];
    const tType = mixType(m.mix, role, r.layer, cols, ctx);
    const count = r.shape.reduce((a, b) => a * b, 1);
    const byteLength = tType === "F32"
      ? count * 4
      : count / QUANT_FORMATS[tType as keyof typeof QUANT_FORMATS].blockSize *
        QUANT_FORMATS[tType as keyof typeof QUANT_FORMATS].blockBytes;
    tensors.push({
      name: r.gguf,
      shape: r.shape,
      type: GgmlType[tType as keyof typeof GgmlType],
      byteLength,
      tType,
    });
  };
  const globals = globalTensors(arch, c);
  add(globals.find((g) => g.entry.role === "embed")!);
  for (let i = 0; i < m.layers; i++) for (const r of layerTensors(arch, c, i)) add(r);
  for (const g of globals) if (g.entry.role !== "embed") add(g);
  const a = arch.gguf.write;
  const u32 = (value: number): GgufValue => ({ type: T.UINT32, value });
  const f32 = (value: number): GgufValue => ({ type: T.FLOAT32, value });
  const meta: Record<string, GgufValue> = {
    "general.architecture": { type: T.STRING, value: a },
    "general.name": { type: T.STRING, value: "kiln-big-random-3b" },
    "general.file_type": u32(MIX_FILE_TYPE[m.mix]),
    "general.quantization_version": u32(2),
    "general.alignment": u32(32),
    [`${a}.vocab_size`]: u32(m.vocab),
    [`${a}.context_length`]: u32(m.context),
    [`${a}.embedding_length`]: u32(m.hidden),
    [`${a}.block_count`]: u32(m.layers),
    [`${a}.feed_forward_length`]: u32(m.ffn),
    [`${a}.attention.head_count`]: u32(m.heads),
    [`${a}.attention.head_count_kv`]: u32(m.kvHeads),
    [`${a}.attention.key_length`]: u32(m.headDim),
    [`${a}.attention.value_length`]: u32(m.headDim),
    [`${a}.attention.layer_norm_rms_epsilon`]: f32(1e-5),
    [`${a}.rope.dimension_count`]: u32(m.headDim),
    [`${a}.rope.freq_base`]: f32(m.ropeTheta),
    ...tokenizerMetadata(undefined, {
      vocabSize: m.vocab,
      bosTokenId: m.bos,
      eosTokenIds: [m.eos],
    }),
  };
  return { meta, tensors };
}

/** xorshift32 over a Uint32Array view: fast enough for 2 GB (a few seconds). */
class Rng {
  #s: number;
  constructor(seed: number) {
    this.#s = seed >>> 0 || 1;
  }
  fill(out: Uint32Array): void {
    let s = this.#s;
    for (let i = 0; i < out.length; i++) {
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      out[i] = s >>> 0;
    }
    this.#s = s;
  }
  /** Uniform in [0, 1). */
  unit(): number {
    const one = new Uint32Array(1);
    this.fill(one);
    return one[0]! / 2 ** 32;
  }
}

function putF16(b: Uint8Array, at: number, v: number): void {
  const h = numberToF16(v);
  b[at] = h & 0xff;
  b[at + 1] = h >> 8;
}

/** Fix the scales of random blocks so that the weights are modest (see the module doc). */
function tameBlocks(type: GgufTensorType, b: Uint8Array, rng: Rng): void {
  if (type === "Q4_K") {
    for (let at = 0; at < b.length; at += 144) {
      const d = 1e-4 * (1 + rng.unit());
      putF16(b, at, d);
      putF16(b, at + 2, 7.5 * d);
    }
  } else if (type === "Q6_K") {
    for (let at = 0; at < b.length; at += 210) {
      for (let s = 0; s < 16; s++) b[at + 192 + s] = 1 + (b[at + 192 + s]! & 7);
      putF16(b, at + 208, 2e-4 * (1 + rng.unit()));
    }
  } else {
    throw new Error(`big model: no random blocks for ${type}`);
  }
}

const CHUNK = 8 << 20;

/** Write the file to `path` (via a temporary name, renamed at the end); returns its size. */
async function generate(path: string): Promise<number> {
  const { meta, tensors } = plan();
  const layout = ggufLayout(meta, tensors);
  const tmp = `${path}.tmp`;
  const file = await Deno.open(tmp, { write: true, create: true, truncate: true });
  const rng = new Rng(BIG_MODEL.seed);
  let written = 0;
  const put = async (bytes: Uint8Array) => {
    for (let o = 0; o < bytes.length;) o += await file.write(bytes.subarray(o));
    written += bytes.length;
  };
  try {
    await put(layout.header);
    const base = layout.header.length;
    for (const [i, t] of tensors.entries()) {
      const gap = base + layout.offsets[i]! - written;
      if (gap > 0) await put(new Uint8Array(gap));
      if (t.tType === "F32") {
        await put(new Uint8Array(new Float32Array(t.byteLength / 4).fill(1).buffer));
        continue;
      }
      const blockBytes = QUANT_FORMATS[t.tType as keyof typeof QUANT_FORMATS].blockBytes;
      const step = Math.floor(CHUNK / blockBytes) * blockBytes;
      for (let o = 0; o < t.byteLength; o += step) {
        const n = Math.min(step, t.byteLength - o);
        const words = new Uint32Array(Math.ceil(n / 4));
        rng.fill(words);
        const bytes = new Uint8Array(words.buffer, 0, n);
        tameBlocks(t.tType, bytes, rng);
        await put(bytes);
      }
    }
    const end = layout.header.length + layout.dataLength;
    if (end > written) await put(new Uint8Array(end - written));
  } finally {
    file.close();
  }
  await Deno.rename(tmp, path);
  return written;
}

/** The hash of the parameters and the planned layout's size, stored beside the file. */
export function bigModelParams(): { hash: string; bytes: number } {
  const { meta, tensors } = plan();
  const layout = ggufLayout(meta, tensors);
  const bytes = layout.header.length + layout.dataLength;
  const hash = bytesToHex(sha256(new TextEncoder().encode(JSON.stringify({ BIG_MODEL, bytes }))));
  return { hash, bytes };
}

/** Make the file unless a matching one is there; returns where it is and what it took. */
export async function ensureBigModel(
  path = BIG_MODEL_PATH,
): Promise<{ path: string; bytes: number; reused: boolean; seconds: number }> {
  const t0 = performance.now();
  const { hash, bytes } = bigModelParams();
  const stamp = `${path}.params`;
  try {
    const [info, stored] = await Promise.all([Deno.stat(path), Deno.readTextFile(stamp)]);
    if (info.size === bytes && stored.trim() === hash) {
      return { path, bytes, reused: true, seconds: (performance.now() - t0) / 1000 };
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
  await Deno.remove(stamp).catch(() => {});
  const n = await generate(path);
  if (n !== bytes) throw new Error(`big model: wrote ${n} bytes, planned ${bytes}`);
  await Deno.writeTextFile(stamp, hash + "\n");
  return { path, bytes, reused: false, seconds: (performance.now() - t0) / 1000 };
}

if (import.meta.main) console.log(JSON.stringify(await ensureBigModel()));
