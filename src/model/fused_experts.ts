/**
 * HF checkpoints that fuse each layer's experts (`ArchDescription.fusedExperts`) split into one
 * tensor per expert under the experts table's names, so `mapWeights` checks them as it checks
 * any family's. Two layouts:
 *
 * - float (F32/F16/BF16): `gate_up` `[experts, hidden, 2·ffn]`, input-major, gate and up
 *   interleaved along the last axis (gate the even columns); `down` `[experts, ffn, hidden]`.
 *   Each expert's gate, up and down become `[out, in]` matrices of the same dtype (transposed).
 * - MXFP4: `<name>_blocks` `[experts, rows, cols/32, 16]` (u8, two E2M1 codes a byte, element
 *   2j the low nibble of byte j) and `<name>_scales` `[experts, rows, cols/32]` (u8 E8M0
 *   exponents), rows already `[out, in]` with gate/up rows interleaved. Each expert's matrices
 *   become GGUF MXFP4 blocks (`gpu/quant/formats/mxfp4.ts`: the exponent byte, then element i
 *   in the low nibble of byte i and element i + 16 in its high nibble), which run as MXFP4.
 *
 * Biases: `gate_up_bias` `[experts, 2·ffn]` (interleaved) and `down_bias` `[experts, hidden]`.
 * Tensors are views: their bytes are rearranged when read.
 */
import { EngineError } from "../contract/errors.ts";
import { DTYPE_BYTES } from "../gpu/dtype.ts";
import { archOf, type FusedExperts } from "./arch/mod.ts";
import type { ModelConfig } from "./config.ts";
import type { ByteTensorInfo, TensorInfo } from "../formats/safetensors.ts";
import type { ByteSource } from "../formats/source.ts";
import type { WeightInfo } from "./weights.ts";

type Info = Omit<WeightInfo, "dtype">;

/**
 * A view of `parts` (byte ranges of their sources) rearranged by `build` when read. The built
 * bytes are kept while a reader takes them in pieces, and dropped once a read reaches their end
 * (a whole model's experts built at once would not fit in memory).
 */
function view(
  name: string,
  parts: readonly Info[],
  size: number,
  build: (...raw: Uint8Array[]) => Uint8Array,
): ByteSource {
  let cache: Uint8Array | undefined;
  return {
    name: `${parts[0]!.source.name} (${name})`,
    size,
    async read(at: number, n: number): Promise<Uint8Array> {
      const all = cache ??
        build(...await Promise.all(parts.map((p) => p.source.read(p.offset, p.length))));
      cache = at + n >= size ? undefined : all;
      return all.subarray(at, at + n);
    },
    release(): void {
      cache = undefined;
      for (const p of parts) p.source.release?.();
    },
  };
}

function refuse(name: string, why: string): EngineError {
  return EngineError.invalidArgument(`tensor ${name}: ${why}`);
}

function checkShape(t: Info, shape: readonly number[]): void {
  if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
    throw refuse(t.name, `shape [${t.shape}] does not match the config's [${shape}]`);
  }
}

/** Sizes of one layer's fused experts. */
interface Dims {
  experts: number;
  hidden: number;
  ffn: number;
}

function dims(c: ModelConfig): Dims {
  if (c.moe === undefined) throw EngineError.invalidArgument("config: fused experts without moe");
  return { experts: c.moe.experts, hidden: c.hiddenSize, ffn: c.moe.expertIntermediateSize };
}

/**
 * Where expert `e`'s `[rows, cols]` matrix (named `name`) lies in a fused tensor: its row r is
 * the fused row `r · step + first` (step 2 for interleaved gate/up halves).
 */
interface ExpertSlice {
  e: number;
  rows: number;
  cols: number;
  step: number;
  first: number;
  name: string;
}

/**
 * Expert `e`'s `[rows, cols]` matrix out of a float `[experts, cols, stride]` tensor, input
 * major: element (r, k) is input element (k, r · step + first).
 */
function transposed(t: TensorInfo, { e, rows, cols, step, first, name }: ExpertSlice): TensorInfo {
  const b = DTYPE_BYTES[t.dtype], stride = rows * step, slab = cols * stride * b;
  const part = { ...t, offset: t.offset + e * slab, length: slab };
  const source = view(name, [part], rows * cols * b, (raw) => {
    const out = new Uint8Array(rows * cols * b);
    for (let r = 0; r < rows; r++) {
      for (let k = 0; k < cols; k++) {
        const from = (k * stride + r * step + first) * b;
        out.set(raw.subarray(from, from + b), (r * cols + k) * b);
      }
    }
    return out;
  });
  return { name, dtype: t.dtype, shape: [rows, cols], offset: 0, length: rows * cols * b, source };
}

/** Expert `e`'s bias: every `step`-th element from `first` of row e of `[experts, n · step]`. */
function biasOf(t: TensorInfo, e: number, n: number, step: number, first: number, name: string) {
  const b = DTYPE_BYTES[t.dtype], row = n * step * b;
  const part = { ...t, offset: t.offset + e * row, length: row };
  if (step === 1) return { ...part, name, shape: [n] } as TensorInfo;
  const source = view(name, [part], n * b, (raw) => {
    const out = new Uint8Array(n * b);
    for (let i = 0; i < n; i++) {
      out.set(raw.subarray((i * step + first) * b, (i * step + first + 1) * b), i * b);
    }
    return out;
  });
  return { name, dtype: t.dtype, shape: [n], offset: 0, length: n * b, source } as TensorInfo;
}

/**
 * Expert `e`'s `[rows, cols]` MXFP4 matrix in GGUF blocks, from HF blocks and scales whose rows
 * are `r · step + first`.
 */
function mxfp4Matrix(
  blocks: ByteTensorInfo,
  scales: ByteTensorInfo,
  { e, rows, cols, step, first, name }: ExpertSlice,
): WeightInfo {
  const per = cols / 32, all = rows * step;
  const bParts = { ...blocks, offset: blocks.offset + e * all * per * 16, length: all * per * 16 };
  const sParts = { ...scales, offset: scales.offset + e * all * per, length: all * per };
  const size = rows * per * 17;
  const source = view(name, [bParts, sParts], size, (raw, exps) => {
    const out = new Uint8Array(size);
    for (let r = 0; r < rows; r++) {
      const src = r * step + first;
      for (let j = 0; j < per; j++) {
        const o = (r * per + j) * 17, from = (src * per + j) * 16;
        out[o] = exps![src * per + j]!;
        for (let i = 0; i < 16; i++) {
          // GGUF byte i: element i (low), element i + 16 (high); HF element k: byte k >> 1,
          // low nibble when k is even.
          const lo = nibble(raw!, from, i), hi = nibble(raw!, from, i + 16);
          out[o + 1 + i] = lo | (hi << 4);
        }
      }
    }
    return out;
  });
  return { name, dtype: "MXFP4", shape: [rows, cols], offset: 0, length: size, source };
}

function nibble(raw: Uint8Array, from: number, k: number): number {
  const byte = raw[from + (k >> 1)]!;
  return k & 1 ? byte >> 4 : byte & 15;
}

/** The HF names of expert `e`'s tensors in layer `l` (the experts table's `{E}` names). */
function expertNames(c: ModelConfig, l: number, e: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of archOf(c).tensors.experts ?? []) {
    out[entry.role] = `model.layers.${l}.${entry.hf.replace("{E}", String(e))}`;
  }
  return out;
}

function take<T extends Info>(m: Map<string, T>, name: string): T | undefined {
  const t = m.get(name);
  m.delete(name);
  return t;
}

/** The fused biases of layer `l`, split per expert into `out`. */
function splitBiases(
  c: ModelConfig,
  f: FusedExperts,
  l: number,
  tensors: Map<string, TensorInfo>,
  out: Map<string, WeightInfo>,
): void {
  const d = dims(c), p = `model.layers.${l}.`;
  const gu = take(tensors, `${p}${f.gateUp}_bias`), down = take(tensors, `${p}${f.down}_bias`);
  if (gu) checkShape(gu, [d.experts, 2 * d.ffn]);
  if (down) checkShape(down, [d.experts, d.hidden]);
  for (let e = 0; e < d.experts; e++) {
    const n = expertNames(c, l, e);
    if (gu && n.gateBias && n.upBias) {
      out.set(n.gateBias, biasOf(gu, e, d.ffn, 2, 0, n.gateBias));
      out.set(n.upBias, biasOf(gu, e, d.ffn, 2, 1, n.upBias));
    }
    if (down && n.downBias) out.set(n.downBias, biasOf(down, e, d.hidden, 1, 0, n.downBias));
  }
}

/**
 * The checkpoint's tensors with fused experts split per expert, float or MXFP4 (`bytes`: the
 * U8 tensors `readCheckpoint` set aside). A U8 tensor no expert uses is refused.
 */
export function splitExperts(
  c: ModelConfig,
  tensors: Map<string, TensorInfo>,
  bytes: Map<string, ByteTensorInfo>,
): Map<string, WeightInfo> {
  const f = archOf(c).fusedExperts;
  const rest = new Map(tensors), blocks = new Map(bytes);
  const out = new Map<string, WeightInfo>();
  for (let l = 0; f && l < c.numLayers; l++) {
    const d = dims(c), p = `model.layers.${l}.`;
    splitBiases(c, f, l, rest, out);
    const gu = take(rest, `${p}${f.gateUp}`), down = take(rest, `${p}${f.down}`);
    if (gu) checkShape(gu, [d.experts, d.hidden, 2 * d.ffn]);
    if (down) checkShape(down, [d.experts, d.ffn, d.hidden]);
    const packed = (name: string, rows: number, cols: number) => {
      const b = take(blocks, `${p}${name}_blocks`), s = take(blocks, `${p}${name}_scales`);
      if (!b || !s) return undefined;
      if (cols % 32 !== 0) throw refuse(b.name, `${cols} columns are not whole MXFP4 blocks`);
      checkShape(b, [d.experts, rows, cols / 32, 16]);
      checkShape(s, [d.experts, rows, cols / 32]);
      return [b, s] as const;
    };
    const guq = packed(f.gateUp, 2 * d.ffn, d.hidden), downq = packed(f.down, d.hidden, d.ffn);
    for (let e = 0; e < d.experts; e++) {
      const n = expertNames(c, l, e);
      for (const [role, first] of [["gate", 0], ["up", 1]] as const) {
        const at = { e, rows: d.ffn, cols: d.hidden, step: 2, first, name: n[role]! };
        if (gu) out.set(at.name, transposed(gu, at));
        if (guq) out.set(at.name, mxfp4Matrix(...guq, at));
      }
      const at = { e, rows: d.hidden, cols: d.ffn, step: 1, first: 0, name: n.down! };
      if (down) out.set(at.name, transposed(down, at));
      if (downq) out.set(at.name, mxfp4Matrix(...downq, at));
    }
  }
  const [stray] = blocks.keys();
  if (stray !== undefined) throw refuse(stray, "U8 data is read only as MXFP4 expert blocks");
  for (const [name, t] of rest) out.set(name, t);
  return out;
}
