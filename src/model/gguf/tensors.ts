/**
 * GGUF tensors under the HF names `weights.ts` checks (`blk.3.attn_q.weight` becomes
 * `model.layers.3.self_attn.q_proj.weight`), with their shapes in HF order (ggml lists dims
 * innermost first, so `[in, out]` becomes `[out, in]`), and the row order of q/k projections
 * in the families whose llama.cpp RoPE interleaves them (the family's `gguf.interleavedQk`).
 */
import { EngineError } from "../../contract/errors.ts";
import type { ByteSource } from "../../formats/source.ts";
import type { ModelConfig } from "../config.ts";
import {
  archOf,
  expertEntryOfGguf,
  hfTensorName as archTensorName,
  MAX_EXPERTS,
} from "../arch/mod.ts";
import type { GgufDtype, GgufTensor } from "../../formats/gguf/header.ts";

/** Rows of a q/k projection stored in llama.cpp's interleaved RoPE order (GGUF files). */
export interface RopeInterleave {
  /** Query (or key) heads of the projection. */
  heads: number;
  /** Width of one head. */
  headDim: number;
}

/** A tensor of a GGUF model, named and shaped as in an HF checkpoint. */
export interface GgufTensorInfo {
  /** The HF name (`model.layers.0.self_attn.q_proj.weight`), or the GGUF name when unmapped. */
  name: string;
  ggufName: string;
  dtype: GgufDtype;
  ggmlType: number;
  /** HF order: `[rows, cols]` for a matrix, each row `cols` elements (whole blocks). */
  shape: number[];
  offset: number;
  length: number;
  source: ByteSource;
  /**
   * Set on interleaved q/k weights and biases: their rows are interleaved per head. HF row `i` is
   * stored row `unpermuteQkRows(shape[0], ropeInterleave.headDim, ropeInterleave.heads)[i]`,
   * which `rowOrder` returns (what the upload and the float64 reader apply, knowing no GGUF).
   */
  ropeInterleave?: RopeInterleave;
  /** HF row `i` is stored row `rowOrder()[i]` (with `ropeInterleave`; shared between tensors). */
  rowOrder?: () => Uint32Array;
}

/** The HF name of a GGUF tensor name in the config's family, or undefined when it has none. */
export function hfTensorName(
  config: Pick<ModelConfig, "arch">,
  ggufName: string,
): string | undefined {
  return archTensorName(archOf(config), ggufName);
}

/**
 * The row order that undoes llama.cpp's q/k permutation: `order[i]` is the stored row holding
 * HF row `i`. llama.cpp stores each head's rows as (first-half row p, second-half row p) pairs,
 * so HF row `s * headDim/2 + p` of a head is its stored row `2p + s`. Quantized rows move whole.
 */
export function unpermuteQkRows(rows: number, headDim: number, heads: number): Uint32Array {
  if (
    !Number.isSafeInteger(headDim) || headDim <= 0 || headDim % 2 !== 0 ||
    !Number.isSafeInteger(heads) || heads <= 0 || rows !== heads * headDim
  ) {
    throw EngineError.invalidArgument(
      `q/k rows: ${rows} rows are not ${heads} heads of an even ${headDim}`,
    );
  }
  const half = headDim / 2;
  const order = new Uint32Array(rows);
  for (let h = 0; h < heads; h++) {
    for (let k = 0; k < headDim; k++) {
      const s = k < half ? 0 : 1;
      const p = k - s * half;
      order[h * headDim + k] = h * headDim + 2 * p + s;
    }
  }
  return order;
}

const EXPERTS_NAME = /^blk\.(0|[1-9]\d{0,5})\.(.+)$/;

/**
 * A stacked expert tensor (`blk.N.ffn_gate_exps.weight`, [experts, rows, cols], or a bias
 * `ffn_gate_exps.bias`, [experts, rows]) as one tensor per expert under HF's names: expert e's
 * rows are the e-th slab of its bytes. Undefined for any other tensor.
 */
function splitExperts(
  config: Pick<ModelConfig, "arch">,
  t: GgufTensor,
): GgufTensorInfo[] | undefined {
  const m = EXPERTS_NAME.exec(t.name);
  const entry = m && expertEntryOfGguf(archOf(config), m[2]!);
  if (!entry) return undefined;
  const shape = [...t.dims].reverse();
  if (shape.length !== entry.shape.length + 1) {
    throw EngineError.invalidArgument(
      `tensor ${t.name}: expected ${entry.shape.length + 1} dimensions ([experts, ${
        entry.shape.join(", ")
      }]), got [${shape}]`,
    );
  }
  const [experts, ...inner] = shape as [number, ...number[]];
  if (experts > MAX_EXPERTS) {
    throw EngineError.invalidArgument(
      `tensor ${t.name}: ${experts} experts, more than the ${MAX_EXPERTS} supported`,
    );
  }
  const length = t.length / experts;
  return Array.from({ length: experts }, (_, e) => ({
    name: `model.layers.${m![1]}.${entry.hf.replace("{E}", String(e))}`,
    ggufName: t.name,
    dtype: t.dtype,
    ggmlType: t.ggmlType,
    shape: inner,
    offset: t.offset + e * length,
    length,
    source: t.source,
  }));
}

/**
 * Every tensor under its HF name (unmapped ones under their GGUF names). q/k weights and biases
 * get `ropeInterleave` and the `rowOrder` that undoes it in families that store them
 * interleaved; others are in HF order. Stacked expert tensors become one tensor per expert.
 */
export function hfTensors(
  config: Pick<ModelConfig, "arch" | "numHeads" | "numKvHeads" | "headDim">,
  tensors: readonly GgufTensor[],
): Map<string, GgufTensorInfo> {
  const out = new Map<string, GgufTensorInfo>();
  const arch = archOf(config);
  // One row order per projection shape, shared by every layer's tensors of that shape.
  const orders = new Map<string, Uint32Array>();
  const orderOf = (rows: number, il: RopeInterleave) => (): Uint32Array => {
    const key = `${rows}/${il.heads}/${il.headDim}`;
    let order = orders.get(key);
    if (!order) orders.set(key, order = unpermuteQkRows(rows, il.headDim, il.heads));
    return order;
  };
  const headsOf = new Map(arch.tensors.layer.map((e) => [e.gguf, e.heads]));
  for (const t of tensors) {
    const experts = splitExperts(config, t);
    if (experts) {
      for (const e of experts) {
        if (out.has(e.name)) {
          throw EngineError.invalidArgument(`tensor ${t.name}: ${e.name} appears twice`);
        }
        out.set(e.name, e);
      }
      continue;
    }
    const name = archTensorName(arch, t.name) ?? t.name;
    if (out.has(name)) {
      throw EngineError.invalidArgument(`tensor ${t.name}: ${name} appears twice in the model`);
    }
    const info: GgufTensorInfo = {
      name,
      ggufName: t.name,
      dtype: t.dtype,
      ggmlType: t.ggmlType,
      shape: [...t.dims].reverse(),
      offset: t.offset,
      length: t.length,
      source: t.source,
    };
    const heads = arch.gguf.interleavedQk && name !== t.name
      ? headsOf.get(t.name.replace(/^blk\.\d+\./, ""))
      : undefined;
    if (heads !== undefined) {
      const n = heads === "q" ? config.numHeads : config.numKvHeads;
      info.ropeInterleave = { heads: n, headDim: config.headDim };
      info.rowOrder = orderOf(info.shape[0] ?? 1, info.ropeInterleave);
    }
    out.set(name, info);
  }
  return out;
}
