/**
 * An HF checkpoint (safetensors of any family `arch/` describes; F32, F16 or BF16) as one GGUF
 * v3 file llama.cpp loads: the hyper-parameters under `<gguf.write>.*`, the tensors under
 * llama.cpp's names (the family's tensor table), the tokenizer (`tokenizer_meta.ts`), and each
 * tensor in the type a quantization mix gives it (`quant_mix.ts`), or, without a mix, in its own
 * dtype.
 *
 * Norms and biases are F32, as llama.cpp's converter writes them; llama3 RoPE scaling becomes
 * the `rope_freqs` tensor llama.cpp reads. In families whose llama.cpp RoPE interleaves q/k
 * (`gguf.interleavedQk`) the q and k rows are permuted from HF's rotate-half layout to
 * interleaved pairs (within each head, HF rows [half][i] become [i][half]); the others run with
 * NEOX RoPE in llama.cpp, HF's layout, so their rows stay. Tensors are read, converted and written
 * one at a time.
 */
import { EngineError } from "../contract/errors.ts";
import {
  decodeWeights,
  encodeWeights,
  isFloatDtype,
  type TensorDtype,
  type WeightDtype,
} from "../gpu/dtype.ts";
import { QUANT_FORMATS, quantize, type QuantType } from "../gpu/formats/registry.ts";
import {
  archOf,
  expertTensors,
  type GlobalRole,
  globalTensors,
  layerTensors,
  type ResolvedTensor,
} from "../model/arch/mod.ts";
import type { ModelConfig } from "../model/config.ts";
import { ropeInvFreq } from "../model/rope.ts";
import type { WeightInfo } from "../model/weights.ts";
import {
  type GgufMix,
  type GgufTensorType,
  type MixContext,
  mixType,
  type TensorRole,
} from "./quant_mix.ts";
import { isRecurrent } from "../model/layer_kinds.ts";
import { ggufMetadata } from "./convert_metadata.ts";
import type { ConvertOptions, HfCheckpoint } from "./hf_checkpoint.ts";

export { ggufMetadata };
export { type ConvertOptions, type HfCheckpoint, readHfCheckpoint } from "./hf_checkpoint.ts";
import { GgmlType, type GgufTensor, writeGguf } from "./writer.ts";

/** Row order that turns HF's rotate-half q/k rows into llama.cpp's interleaved pairs. */
export function ropeRowPermutation(heads: number, headDim: number): number[] {
  const half = headDim / 2;
  const perm: number[] = [];
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) perm.push(h * headDim + i, h * headDim + half + i);
  }
  return perm;
}

/** Reorder the rows of a row-major matrix (`rows` rows of equal length): row i = in row perm[i]. */
export function permuteRows(bytes: Uint8Array, rows: number, perm: readonly number[]): Uint8Array {
  const len = bytes.length / rows;
  const out = new Uint8Array(bytes.length);
  for (let i = 0; i < rows; i++) {
    out.set(bytes.subarray(perm[i]! * len, (perm[i]! + 1) * len), i * len);
  }
  return out;
}

const FLOAT_TYPES: Record<"F32" | "F16" | "BF16", [number, WeightDtype]> = {
  F32: [GgmlType.F32, "f32"],
  F16: [GgmlType.F16, "f16"],
  BF16: [GgmlType.BF16, "bf16"],
};
const DTYPE_TYPE: Record<WeightDtype, GgufTensorType> = { f32: "F32", f16: "F16", bf16: "BF16" };

/** The GGUF type of a source dtype (a quantized source's is its own). */
const typeOf = (d: TensorDtype): GgufTensorType => isFloatDtype(d) ? DTYPE_TYPE[d] : d;

/** One tensor of the conversion: where it comes from and what it becomes. */
export interface PlannedTensor {
  name: string;
  type: GgufTensorType;
  /** HF order, outermost first. */
  shape: number[];
  role: TensorRole;
  /** The layer, or -1. */
  layer: number;
  source: WeightInfo;
  /** A stacked expert tensor: every expert's tensor, in order (`source` is the first). */
  stack?: WeightInfo[];
  perm?: number[];
}

function tensorBytesOf(type: GgufTensorType, shape: readonly number[]): number {
  const count = shape.reduce((a, d) => a * d, 1);
  if (type === "F32" || type === "F16" || type === "BF16") {
    return count * (type === "F32" ? 4 : 2);
  }
  const f = QUANT_FORMATS[type];
  return count / f.blockSize * f.blockBytes;
}

/** Every tensor in llama.cpp's names, order and types. */
export function planTensors(ck: HfCheckpoint, mix?: GgufMix): PlannedTensor[] {
  const { config: c, weights: w } = ck;
  const arch = archOf(c);
  const ctx: MixContext = { numLayers: c.numLayers, tied: c.tieWordEmbeddings };
  if (isRecurrent(c)) {
    // llama.cpp counts the tensors it files as attn_v (a delta net's attn_qkv among them).
    ctx.attentionLayers = Array.from({ length: c.numLayers }, (_, l) => l).filter((l) =>
      layerTensors(arch, c, l).some((r) => r.entry.mix === "attn_v")
    );
  }
  const out: PlannedTensor[] = [];
  const add = (r: ResolvedTensor<string>, source: WeightInfo) => {
    const shape = [...source.shape];
    const cols = shape[shape.length - 1]!;
    const role = r.entry.mix ?? "vector";
    // A tensor the checkpoint holds quantized (MXFP4 experts) keeps its type, as llama.cpp's
    // converter keeps it.
    const type = !isFloatDtype(source.dtype) || (role !== "vector" && mix === undefined)
      ? typeOf(source.dtype)
      : role === "vector"
      ? "F32"
      : mixType(mix!, role, r.layer, cols, ctx);
    const perm = arch.gguf.interleavedQk && r.heads !== undefined
      ? ropeRowPermutation(r.heads, c.headDim)
      : undefined;
    out.push({
      name: r.gguf,
      type,
      shape,
      role,
      layer: r.layer,
      source,
      ...(perm ? { perm } : {}),
    });
  };
  const globals = globalTensors(arch, c);
  const global = (role: GlobalRole) => globals.find((r) => r.entry.role === role);
  add(global("embed")!, w.embed);
  for (const [i, l] of w.layers.entries()) {
    for (const r of layerTensors(arch, c, i)) add(r, l[r.entry.role]!);
    // Each expert tensor once, stacked over the experts ([experts, ...shape]).
    for (const r of expertTensors(arch, c, i).filter((r) => r.expert === 0)) {
      const stack = l.experts!.map((e) => e[r.entry.role]!);
      add(r, stack[0]!);
      const p = out[out.length - 1]!;
      p.shape = [stack.length, ...p.shape];
      p.stack = stack;
    }
  }
  add(global("norm")!, w.norm);
  // Tied embeddings: llama.cpp falls back to token_embd when `output` is absent.
  const head = global("lmHead");
  if (head) add(head, w.lmHead);
  return out;
}

/** The bytes of a planned tensor in its GGUF type. */
export async function plannedBytes(p: PlannedTensor): Promise<Uint8Array> {
  const { stack, ...one } = p;
  if (stack) {
    const shape = p.shape.slice(1);
    const parts = await Promise.all(stack.map((source) => plannedBytes({ ...one, source, shape })));
    const out = new Uint8Array(parts.reduce((n, b) => n + b.length, 0));
    let at = 0;
    for (const b of parts) out.set(b, (at += b.length) - b.length);
    return out;
  }
  const t = p.source;
  let raw = await t.source.read(t.offset, t.length);
  if (p.perm) raw = permuteRows(raw, p.shape[0]!, p.perm);
  if (p.type === typeOf(t.dtype)) return raw;
  if (!isFloatDtype(t.dtype)) {
    throw EngineError.invalidArgument(`tensor ${t.name}: ${t.dtype} cannot become ${p.type}`);
  }
  const values = decodeWeights(raw, t.dtype);
  if (p.type === "F32" || p.type === "F16" || p.type === "BF16") {
    if (p.type === "F16" && values.some((v) => Math.abs(v) > 65504)) {
      throw EngineError.invalidArgument(`tensor ${t.name}: values beyond the F16 range`);
    }
    return encodeWeights(values, FLOAT_TYPES[p.type][1]);
  }
  const rows = p.shape.length === 1 ? 1 : p.shape[0]!;
  return quantize(p.type, Float32Array.from(values), rows, values.length / rows);
}

/**
 * llama3 RoPE scaling as llama.cpp takes it: `rope_freqs.weight`, one F32 divisor per frequency
 * (the unscaled inverse frequency over the scaled one).
 */
function ropeFreqs(c: ModelConfig): GgufTensor {
  const plain = ropeInvFreq(c.headDim, c.ropeTheta);
  const scaled = ropeInvFreq(c.headDim, c.ropeTheta, c.ropeScaling);
  return f32Tensor("rope_freqs.weight", Array.from(plain, (f, i) => f / scaled[i]!));
}

/** A 1-D F32 tensor of `values`. */
function f32Tensor(name: string, values: readonly number[]): GgufTensor {
  const bytes = new Uint8Array(Float32Array.from(values).buffer);
  return {
    name,
    shape: [values.length],
    type: GgmlType.F32,
    byteLength: bytes.length,
    data: () => bytes,
  };
}

function ggmlTypeNumber(type: GgufTensorType): number {
  return type === "F32" || type === "F16" || type === "BF16"
    ? FLOAT_TYPES[type][0]
    : QUANT_FORMATS[type as QuantType].ggmlType;
}

/** The tensors to write (their data converted when the writer reaches them). */
export function ggufTensors(ck: HfCheckpoint, plan: readonly PlannedTensor[]): GgufTensor[] {
  const out: GgufTensor[] = plan.map((p) => ({
    name: p.name,
    shape: p.shape,
    type: ggmlTypeNumber(p.type),
    byteLength: tensorBytesOf(p.type, p.shape),
    data: () => plannedBytes(p),
  }));
  const rope = ck.config.ropeScaling;
  if (rope.type === "llama3" || rope.type === "factors") out.push(ropeFreqs(ck.config));
  if (rope.type === "longrope") {
    out.push(f32Tensor("rope_factors_long.weight", rope.longFactor));
    out.push(f32Tensor("rope_factors_short.weight", rope.shortFactor));
  }
  return out;
}

/** What a conversion wrote. */
export interface ConvertReport {
  /** Bytes of the whole file. */
  bytes: number;
  /** Tensors written per ggml type name. */
  types: Record<string, number>;
  /** Elements of every tensor. */
  elements: number;
  /** Bits per element of the tensor data (padding and header excluded). */
  bitsPerWeight: number;
  /** Each tensor's name and type. */
  tensors: { name: string; type: GgufTensorType }[];
  /** What was written by a guess (an unrecognised pre-tokenizer). */
  warnings: string[];
}

/** Convert `ck` and write the GGUF file through `write`, one tensor at a time. */
export async function writeHfAsGguf(
  ck: HfCheckpoint,
  write: (bytes: Uint8Array) => Promise<unknown> | unknown,
  opts: ConvertOptions = {},
): Promise<ConvertReport> {
  const warnings: string[] = [];
  const meta = ggufMetadata(ck, opts, warnings);
  const plan = planTensors(ck, opts.mix);
  const tensors = ggufTensors(ck, plan);
  const bytes = await writeGguf(write, meta, tensors);
  const types: Record<string, number> = {};
  let elements = 0;
  let dataBytes = 0;
  const list = tensors.map((t, i) => {
    const type = plan[i]?.type ?? "F32";
    types[type] = (types[type] ?? 0) + 1;
    elements += t.shape.reduce((a, d) => a * d, 1);
    dataBytes += t.byteLength;
    return { name: t.name, type };
  });
  return {
    bytes,
    types,
    elements,
    bitsPerWeight: 8 * dataBytes / elements,
    tensors: list,
    warnings,
  };
}
