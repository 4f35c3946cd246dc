/**
 * The tensors a checkpoint must hold (its family's tensor table, `arch/`), checked against the
 * config before
 * any GPU allocation: a missing tensor, a wrong shape or an unsupported dtype is refused with
 * `InvalidArgument` naming the tensor.
 */
import { EngineError } from "../contract/errors.ts";
import { decodeWeights, DTYPE_BYTES, type TensorDtype, type WeightDtype } from "../gpu/dtype.ts";
import {
  archOf,
  type Dim,
  dimSize,
  type ExpertRole,
  expertTensors,
  type GlobalRole,
  globalTensors,
  type LayerRole,
  layerTensors,
  type ResolvedTensor,
  type TensorEntry,
} from "./arch/mod.ts";
import type { ModelConfig } from "./config.ts";
import type { ByteSource } from "../formats/source.ts";
import type { TensorInfo } from "../formats/safetensors.ts";

/**
 * A tensor of either format, named and shaped as in an HF checkpoint (`[rows, cols]`): a
 * safetensors `TensorInfo`, or a GGUF tensor, which may be block-quantized and whose rows may
 * be stored in another order than HF's (`rowOrder`, which the reader sets: llama.cpp's q/k).
 */
export interface WeightInfo {
  /** The tensor's HF name (e.g. `model.layers.0.self_attn.q_proj.weight`). */
  name: string;
  /** Element type, possibly a block-quantized GGUF type. */
  dtype: TensorDtype;
  /** Dimensions, outermost first. */
  shape: number[];
  /** Byte offset of the data in `source`. */
  offset: number;
  /** Length of the data in bytes. */
  length: number;
  /** The file holding the data. */
  source: ByteSource;
  /**
   * Set when the rows are stored in another order: HF row `i` is stored row `rowOrder()[i]`
   * (whole rows, quantized ones too), computed (and checked) when the values are read. Readers
   * of the values apply it; only the format's reader knows why (GGUF: llama.cpp's interleaved
   * q/k rows). The array may be shared: never written.
   */
  rowOrder?: () => Uint32Array;
}

/** The tensors of one transformer layer (HF names in brackets). */
export interface LayerWeights<T extends WeightInfo = TensorInfo> {
  /** RMSNorm weight before attention (`input_layernorm`), in pre-norm families. */
  inputNorm?: T;
  /** Query projection (`self_attn.q_proj`), unless stacked. */
  q?: T;
  /** Key projection (`self_attn.k_proj`), unless stacked. */
  k?: T;
  /** Value projection (`self_attn.v_proj`), unless stacked. */
  v?: T;
  /** Attention output projection (`self_attn.o_proj`), in attention layers. */
  o?: T;
  /** Query bias, when the config has attention biases. */
  qBias?: T;
  /** Key bias, when the config has attention biases. */
  kBias?: T;
  /** Value bias, when the config has attention biases. */
  vBias?: T;
  /** Per-head RMSNorm weight of q [head_dim] (`self_attn.q_norm`), in families with one. */
  qNorm?: T;
  /** Per-head RMSNorm weight of k [head_dim] (`self_attn.k_norm`), in families with one. */
  kNorm?: T;
  /** RMSNorm weight before the MLP (`post_attention_layernorm`), in pre-norm families. */
  postNorm?: T;
  /** MLP gate projection (`mlp.gate_proj`), in families with a dense MLP, unless stacked. */
  gate?: T;
  /** MLP up projection (`mlp.up_proj`), in families with a dense MLP, unless stacked. */
  up?: T;
  /** MLP down projection (`mlp.down_proj`), in families with a dense MLP. */
  down?: T;
  /** The router of a mixture-of-experts MLP [experts, hidden] (`mlp.gate`). */
  router?: T;
  /** A mixture-of-experts MLP's experts, in order (`mlp.experts.E.*`). */
  experts?: ExpertWeights<T>[];
  /** RMSNorm of the attention output before its residual add, in families with one. */
  attnOutNorm?: T;
  /** RMSNorm of the MLP output before its residual add, in families with one. */
  mlpOutNorm?: T;
  /** q, k and v stacked (`self_attn.qkv_proj`), in families that stack them. */
  qkv?: T;
  /** gate and up stacked (`mlp.gate_up_proj`), in families that stack them. */
  gateUp?: T;
  /** The attention output projection's bias (`self_attn.o_proj.bias`), in families with one. */
  oBias?: T;
  /** Per-head attention sink logits [heads] (`self_attn.sinks`), in families with them. */
  sinks?: T;
  /** The router's bias [experts] (`mlp.router.bias`), in families with one. */
  routerBias?: T;
  /** A short-convolution layer's input projection [3·hidden, hidden] (B, C and x rows). */
  convIn?: T;
  /** A short-convolution layer's taps [hidden, convWidth]. */
  conv?: T;
  /** A short-convolution layer's output projection [hidden, hidden]. */
  convOut?: T;
  /** A Mamba2 layer's input projection [z; x; B; C; dt rows, hidden]. */
  ssmIn?: T;
  /** A Mamba2 layer's convolution taps [x + B + C channels, convWidth]. */
  ssmConv?: T;
  /** A Mamba2 layer's convolution bias. */
  ssmConvBias?: T;
  /** A Mamba2 layer's time-step bias [heads]. */
  ssmDtBias?: T;
  /** A Mamba2 layer's A = -exp(A_log) [heads, 1]. */
  ssmA?: T;
  /** A Mamba2 layer's skip D [heads, 1]. */
  ssmD?: T;
  /** A Mamba2 layer's grouped norm weight [groups, inner / groups]. */
  ssmNorm?: T;
  /** A Mamba2 layer's output projection [hidden, inner] (a delta net layer's [hidden, vInner]). */
  ssmOut?: T;
  /** A gated delta net layer's q | k | v projection [deltaConv, hidden]. */
  deltaQkv?: T;
  /** A gated delta net layer's output gate projection [vHeads·vDim, hidden]. */
  deltaZ?: T;
  /** A gated delta net layer's beta logits [vHeads, hidden]. */
  deltaBeta?: T;
  /** A gated delta net layer's decay logits [vHeads, hidden]. */
  deltaAlpha?: T;
}

/**
 * One expert's tensors (`gate_proj`, `up_proj`, `down_proj` of `mlp.experts.E`), and its
 * biases in families whose experts have them.
 */
export type ExpertWeights<T extends WeightInfo = TensorInfo> =
  & Record<"gate" | "up" | "down", T>
  & Partial<Record<Exclude<ExpertRole, "gate" | "up" | "down">, T>>;

/** Every tensor a checkpoint needs, checked against its config. */
export interface ModelWeights<T extends WeightInfo = TensorInfo> {
  /** Token embedding (`model.embed_tokens`). */
  embed: T;
  /** The layers, in order. */
  layers: LayerWeights<T>[];
  /** Final RMSNorm weight (`model.norm`). */
  norm: T;
  /** The LM head: `lm_head.weight`, or the embedding when tied. */
  lmHead: T;
}

/**
 * A float tensor whose values are read as `f(w)` (as f32): where HF stores a norm weight less one
 * (`TensorEntry.hfAddOne`: `1 + w`) or Mamba's `A_log` (`hfNegExp`: `-exp(w)`), so the loaded
 * model holds the value it computes with, as GGUF stores it.
 */
function mapValues<T extends WeightInfo>(t: T, what: string, f: (v: number) => number): T {
  const dtype = t.dtype;
  if (!Object.hasOwn(DTYPE_BYTES, dtype) || t.shape.length > 2) {
    throw EngineError.invalidArgument(`tensor ${t.name}: expected a float vector, got ${dtype}`);
  }
  const length = t.shape.reduce((a, b) => a * b, 1) * 4;
  const inner = t.source, offset = t.offset, bytes = t.length;
  const source = {
    name: `${inner.name} (${t.name} ${what})`,
    size: length,
    async read(at: number, n: number): Promise<Uint8Array> {
      const raw = await inner.read(offset, bytes);
      const w = decodeWeights(raw, dtype as WeightDtype);
      const out = Float32Array.from(w, f);
      return new Uint8Array(out.buffer).slice(at, at + n);
    },
    release(): void {
      inner.release?.();
    },
  };
  return { ...t, dtype: "f32", offset: 0, length, source } as T;
}

/** A float matrix `t` whose column `i` is the stored column `order[i]` (read as f32). */
function permuteColumns<T extends WeightInfo>(t: T, order: Uint32Array): T {
  const dtype = t.dtype, [rows, cols] = t.shape as [number, number];
  if (!Object.hasOwn(DTYPE_BYTES, dtype) || t.shape.length !== 2 || cols !== order.length) {
    throw EngineError.invalidArgument(`tensor ${t.name}: expected a float matrix, got ${dtype}`);
  }
  const inner = t.source, offset = t.offset, bytes = t.length, length = rows * cols * 4;
  const source = {
    name: `${inner.name} (${t.name} columns reordered)`,
    size: length,
    async read(at: number, n: number): Promise<Uint8Array> {
      const w = decodeWeights(await inner.read(offset, bytes), dtype as WeightDtype);
      const out = new Float32Array(rows * cols);
      for (let r = 0; r < rows; r++) {
        for (let c = 0; c < cols; c++) out[r * cols + c] = w[r * cols + order[c]!]!;
      }
      return new Uint8Array(out.buffer).slice(at, at + n);
    },
    release(): void {
      inner.release?.();
    },
  };
  return { ...t, dtype: "f32", offset: 0, length, source } as T;
}

/**
 * A layer tensor of an HF checkpoint as the model holds it: reshaped (`hfShape`), cut from a
 * stack of row blocks (`hfRows`), `1 + w` (`hfAddOne`) or `-exp(w)` (`hfNegExp`).
 */
function hfLayerTensor<T extends WeightInfo>(
  r: ResolvedTensor<LayerRole>,
  config: ModelConfig,
  get: (name: string, shape: number[]) => T,
): T {
  const e = r.entry, dims = (ds: readonly Dim[]) => ds.map((d) => dimSize(config, d));
  let t: T;
  if (e.hfRows) {
    const whole = get(r.hfStored ?? r.hf, dims(e.hfRows.of));
    const bytes = whole.length / e.hfRows.parts;
    t = { ...whole, offset: whole.offset + e.hfRows.part * bytes, length: bytes, shape: r.shape };
  } else if (e.hfShape) t = { ...get(r.hf, dims(e.hfShape)), shape: r.shape };
  else t = get(r.hf, r.shape);
  if (e.hfAddOne) t = mapValues(t, "+ 1", (v) => 1 + v);
  if (e.hfNegExp) t = mapValues(t, "-exp", (v) => -Math.exp(v));
  return e.hfTiledHeads ? tiledHeads(t, e.hfTiledHeads, config, dims) : t;
}

/**
 * `t` with its delta net value heads in llama.cpp's tiled order (`TensorEntry.hfTiledHeads`):
 * rows through `rowOrder`, columns (a float tensor) through a source that reorders each row.
 */
function tiledHeads<T extends WeightInfo>(
  t: T,
  tile: NonNullable<TensorEntry<LayerRole>["hfTiledHeads"]>,
  config: ModelConfig,
  dims: (ds: readonly Dim[]) => number[],
): T {
  const d = config.delta;
  if (d === undefined) throw EngineError.invalidArgument(`tensor ${t.name}: no delta sizes`);
  const [offset] = tile.offset ? dims([tile.offset]) : [0];
  const [unit] = dims([tile.unit]);
  const n = t.shape[tile.axis]!, per = d.vHeads / d.kHeads;
  const order = Uint32Array.from({ length: n }, (_, i) => i);
  for (let s = 0; s < d.vHeads; s++) {
    const hf = (s % d.kHeads) * per + Math.floor(s / d.kHeads);
    for (let u = 0; u < unit!; u++) order[offset! + s * unit! + u] = offset! + hf * unit! + u;
  }
  if (tile.axis === 0) return { ...t, rowOrder: () => order };
  return permuteColumns(t, order);
}

/**
 * Check names and shapes of every tensor the model uses. `hf`: the tensors are an HF
 * checkpoint's, whose `hfAddOne` norms are read as `1 + w`.
 */
export function mapWeights<T extends WeightInfo>(
  config: ModelConfig,
  tensors: Map<string, T>,
  hf = false,
): ModelWeights<T> {
  const arch = archOf(config);
  const get = (name: string, shape: number[]): T => {
    const t = tensors.get(name);
    if (t === undefined) {
      throw EngineError.invalidArgument(`tensor ${name}: missing from the checkpoint`);
    }
    if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      throw EngineError.invalidArgument(
        `tensor ${name}: shape [${t.shape}] does not match the config's [${shape}]`,
      );
    }
    return t;
  };
  const layers: LayerWeights<T>[] = [];
  for (let i = 0; i < config.numLayers; i++) {
    const layer: Partial<LayerWeights<T>> = {};
    for (const r of layerTensors(arch, config, i)) {
      layer[r.entry.role] = hf ? hfLayerTensor(r, config, get) : get(r.hf, r.shape);
    }
    const experts: Partial<ExpertWeights<T>>[] = [];
    for (const r of expertTensors(arch, config, i)) {
      (experts[r.expert!] ??= {})[r.entry.role] = get(r.hf, r.shape);
    }
    if (experts.length > 0) layer.experts = experts as ExpertWeights<T>[];
    layers.push(layer as LayerWeights<T>);
  }
  const global: Partial<Record<GlobalRole, T>> = {};
  for (const r of globalTensors(arch, config)) {
    const t = get(r.hf, r.shape);
    global[r.entry.role] = hf && r.entry.hfAddOne ? mapValues(t, "+ 1", (v) => 1 + v) : t;
  }
  const embed = global.embed!;
  return { embed, layers, norm: global.norm!, lmHead: global.lmHead ?? embed };
}

/** Every tensor the model reads, once each, in a stable order. */
export function weightList<T extends WeightInfo>(w: ModelWeights<T>): T[] {
  const out = new Set<T>([w.embed]);
  for (const { experts, ...l } of w.layers) {
    for (const t of Object.values(l)) out.add(t);
    for (const e of experts ?? []) for (const t of Object.values(e)) out.add(t);
  }
  out.add(w.norm);
  out.add(w.lmHead);
  return [...out];
}

/**
 * Refuse a model that cannot fit: a row of a matrix beyond one binding (a matrix bigger than a
 * binding is split by rows over several buffers, but a row cannot be), or a total beyond
 * `budget`.
 */
export function checkFits(
  tensors: readonly Pick<WeightInfo, "name" | "length" | "shape">[],
  limits: { maxStorageBufferBindingSize: number; maxBufferSize: number },
  budget = Infinity,
): void {
  const perBuffer = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
  for (const t of tensors) {
    const row = t.shape.length > 1 ? t.length / t.shape[0]! : t.length;
    if (row > perBuffer) {
      throw new EngineError(
        "ResourceExhausted",
        `tensor ${t.name} needs ${row} bytes per row in one buffer; the device allows ${perBuffer}`,
      );
    }
  }
  const total = tensors.reduce((n, t) => n + t.length, 0);
  if (total > budget) {
    throw new EngineError(
      "ResourceExhausted",
      `the weights need ${total} bytes; the budget allows ${budget}`,
    );
  }
}
