/**
 * Causal GQA-aware attention over the paged KV cache (single-pass or split-K, or the `rows`
 * kernel on CPU adapters). The cache and its writes (alone, or fused with RoPE on one q/k/v
 * product) are `kv_cache.ts`'s, re-exported here. The cache layout is [blocks, blockSize,
 * kvHeads, headDim] in f32, or in f16 packed two per u32 (core WGSL, no `shader-f16` needed).
 */
import { storageBuffer } from "../buffers.ts";
import type { Dispatch } from "../dispatch.ts";
import { kernelPaths } from "../paths.ts";
import { checkBuffer, fail, groupsOf8, placeholder, prepareKernel } from "./kernel.ts";
import { checkHeads, type KvDtype } from "./kv_cache.ts";

export {
  kvBytesPerElement,
  type KvDtype,
  type KvWriteArgs,
  prepareKvWrite,
  prepareRopeKv,
  type RopeKvArgs,
} from "./kv_cache.ts";

/** Buffers and shape of {@linkcode prepareAttention}. */
export interface AttentionArgs {
  /** Queries, f32 [tokens, heads, headDim], already rotated. */
  q: GPUBuffer;
  /** Key cache, [blocks, blockSize, kvHeads, headDim] in `kvDtype`. */
  kCache: GPUBuffer;
  /** Value cache, same layout as `kCache`. */
  vCache: GPUBuffer;
  /** u32 per query token: its position (it attends to keys 0..=position). */
  positions: GPUBuffer;
  /** u32 per query token: offset of its sequence's block table in `blockTable`. */
  tableOffsets: GPUBuffer;
  /** The block tables of the step's sequences, concatenated (u32 block ids). */
  blockTable: GPUBuffer;
  /** Output, f32 [tokens, heads, headDim]. */
  out: GPUBuffer;
  /** Number of query tokens. */
  tokens: number;
  /** Query heads per token. */
  heads: number;
  /** Key/value heads (divides `heads`; grouped-query attention). */
  kvHeads: number;
  /** Width of a head (even, at most 256). */
  headDim: number;
  /** Tokens per KV cache block. */
  blockSize: number;
  /** Key-axis splits (1: single pass). */
  splits?: number;
  /**
   * The most keys a query of the call can see (the context). The `rows` kernel takes the call
   * only when it is known and each split then holds at most {@linkcode ROWS_KEYS} of them.
   */
  maxKeys?: number;
  /**
   * Split partials to write and merge (default: buffers of the call's own): `ml` of at least
   * tokens × heads × splits × 8 bytes and `acc` of tokens × heads × splits × headDim × 4. Calls
   * that run one after another (the layers of a step) can share them.
   */
  partials?: { ml: GPUBuffer; acc: GPUBuffer };
  /** Cache element type (default f32). */
  kvDtype?: KvDtype;
  /** Query scale (default 1/sqrt(headDim)). */
  scale?: number;
  /** Sliding window: a query sees itself and the `window - 1` keys before it (default: all). */
  window?: number;
  /** Scores become cap·tanh(s / cap) (default: none). */
  softcap?: number;
  /**
   * Attention sinks, f32 [heads]: head h's softmax takes one more logit `sinks[h]` (not scaled
   * or capped) whose column is dropped, so the weights of the keys sum to less than 1.
   */
  sinks?: GPUBuffer;
}

/** The dispatches of one attention call and the buffers they own. */
export interface AttentionDispatch {
  /** Run in order: the attention pass, then (with splits) the merge of the partial results. */
  dispatches: Dispatch[];
  /** Buffers owned by these dispatches (uniforms, split partials); destroy with them. */
  owned: GPUBuffer[];
  /** The kernel that took the call (see `KernelPaths.attention`). */
  kernel: "tiles" | "rows";
}

/** Keys per split below which splitting does not pay: one workgroup handles them well. */
export const KEYS_PER_SPLIT = 256;

/** How many key-axis splits suit a context of `keys` keys (1 for short ones, at most 32). */
export function chooseSplits(keys: number): number {
  return Math.max(1, Math.min(32, Math.floor(keys / KEYS_PER_SPLIT)));
}

/** Threads per attention workgroup and the most query heads one workgroup serves. */
const WG = 64;
const MAX_GROUP = 8;
/** Workgroup memory for q: GROUP * headDim floats. */
const Q_FLOATS = 1024;

/** How the query heads sharing one kv head and the head dims map onto workgroups and threads. */
export interface AttentionLayout {
  /** Query heads per workgroup (the GROUP override). */
  group: number;
  /** Workgroups per kv head (heads / kvHeads / group). */
  chunks: number;
  /** Threads per key lane (each owns dim pairs lane, lane + lanes, ...). */
  lanes: number;
  /** Key lanes: threads that split a tile's keys for the P·V sum. */
  keyLanes: number;
  /** Dim pairs per thread (the PPT override). */
  pairsPerThread: number;
}

/** The workgroup layout {@linkcode prepareAttention} uses for these head counts. */
export function attentionLayout(heads: number, kvHeads: number, headDim: number): AttentionLayout {
  const perKv = heads / kvHeads;
  const cap = Math.min(MAX_GROUP, Math.floor(Q_FLOATS / headDim));
  let chunks = Math.ceil(perKv / cap);
  while (perKv % chunks !== 0) chunks++;
  const pairs = headDim / 2;
  const lanes = Math.min(pairs, WG);
  return {
    group: perKv / chunks,
    chunks,
    lanes,
    keyLanes: Math.floor(WG / lanes),
    pairsPerThread: Math.ceil(pairs / lanes),
  };
}

/** Floats of q (and of the accumulator) one thread of the `rows` kernel holds. */
const ROWS_QD = 256;

/**
 * The most keys one thread of the `rows` kernel walks. Mesa's lavapipe ends any invocation's
 * loops after 65535 iterations in all (its loop limiter, shared by every loop of the shader),
 * and a key costs a few dozen of them; the split count keeps each thread's share well below.
 */
export const ROWS_KEYS = 256;

/** Key-axis splits for the `rows` kernel over `maxKeys` keys: at most ROWS_KEYS a split. */
export function rowsSplits(maxKeys: number): number {
  return Math.max(1, Math.ceil(maxKeys / ROWS_KEYS));
}

/**
 * The `rows` kernel's head chunks (`attention_rows.wgsl`): query heads per thread such that they
 * divide the heads of a kv head and their q fits one thread; undefined where that kernel does not
 * take the shape (a head dim that is not a multiple of 4).
 */
export function rowsLayout(
  heads: number,
  kvHeads: number,
  headDim: number,
): { group: number; chunks: number } | undefined {
  if (headDim % 4 !== 0 || headDim > ROWS_QD) return undefined;
  const perKv = heads / kvHeads;
  let chunks = Math.ceil(perKv / Math.min(MAX_GROUP, Math.floor(ROWS_QD / headDim)));
  while (perKv % chunks !== 0) chunks++;
  return { group: perKv / chunks, chunks };
}

/** The uniform words of an attention call that are f32 (scale, softcap). */
const FLOATS = [6, 11] as const;

/** What the kernels of one attention call share, from its checked arguments. */
interface AttentionPlan {
  /** Key-axis splits (1: single pass). */
  splits: number;
  /** Whether the `rows` kernel takes the call (else `tiles`). */
  rows: boolean;
  /** The attention pass's shader. */
  shader: "attention" | "attention_rows";
  /** The uniform every kernel of the call reads. */
  uniform: number[];
  /** The attention pass's override constants. */
  constants: Record<string, number>;
  /** Bindings 1..6: q, the caches, positions, table offsets and block table. */
  common: Record<number, GPUBuffer>;
  /** Binding 10: the sinks, or a placeholder. */
  sinks: Record<number, GPUBuffer>;
  /** Threads of the `rows` kernel per split: one per (token, kv head, head chunk). */
  threads: number;
  /** The single pass's workgroups (on `tiles`, the split pass's before its split axis). */
  workgroups: readonly [number, number];
}

/**
 * Causal attention over the paged KV cache, scaled by `scale` (1/sqrt(headDim)), in one pass or split over
 * the key axis and merged, by the kernel the device's paths take (`tiles`, or on a CPU adapter
 * `rows` where the shape and `maxKeys` allow). Throws `InvalidArgument` on head counts that do not divide, an
 * odd head dim or one above 256.
 */
export async function prepareAttention(
  device: GPUDevice,
  a: AttentionArgs,
  label = "attention",
): Promise<AttentionDispatch> {
  const p = planAttention(device, a, label);
  if (p.splits === 1) {
    const d = await prepareKernel(device, {
      label,
      shader: p.shader,
      entry: p.rows ? "rows" : "single",
      constants: p.constants,
      uniform: p.uniform,
      floats: FLOATS,
      buffers: { ...p.common, 7: a.out, ...p.sinks },
      workgroups: p.workgroups,
    });
    return { dispatches: [d], owned: [d.uniform], kernel: p.rows ? "rows" : "tiles" };
  }
  return await prepareSplitAttention(device, a, label, p);
}

/** Check `a` (throwing `InvalidArgument` as {@linkcode prepareAttention} says) and plan its call. */
function planAttention(device: GPUDevice, a: AttentionArgs, label: string): AttentionPlan {
  checkHeads(label, a.heads, a.kvHeads, a.headDim);
  if (a.headDim > 256) fail(label, `head_dim ${a.headDim} > 256 is not supported`);
  const splits = Math.max(1, a.splits ?? 1);
  const bounded = a.maxKeys !== undefined && Math.ceil(a.maxKeys / splits) <= ROWS_KEYS;
  const rows = kernelPaths(device).attention === "rows" && bounded
    ? rowsLayout(a.heads, a.kvHeads, a.headDim)
    : undefined;
  const lay = rows
    ? { ...attentionLayout(a.heads, a.kvHeads, a.headDim), ...rows }
    : attentionLayout(a.heads, a.kvHeads, a.headDim);
  const scale = a.scale ?? 1 / Math.sqrt(a.headDim);
  const window = a.window ?? 0, softcap = a.softcap ?? 0;
  if (!(Number.isFinite(scale) && scale > 0)) fail(label, `scale ${scale} is not > 0`);
  if (!(Number.isInteger(window) && window >= 0 && window < 2 ** 32)) {
    fail(label, `window ${window} is not an integer >= 1 (0: none)`);
  }
  if (!(Number.isFinite(softcap) && softcap >= 0)) {
    fail(label, `softcap ${softcap} is not a finite number >= 0 (0: none)`);
  }
  const uniform = [
    a.tokens,
    a.heads,
    a.kvHeads,
    a.headDim,
    a.blockSize,
    splits,
    scale,
    lay.chunks,
    lay.lanes,
    lay.keyLanes,
    window,
    softcap,
  ];
  if (a.sinks) checkBuffer(device, label, "sinks", a.sinks, a.heads * 4);
  // `rows`: one thread per (token, kv head, head chunk, split), 8 to a workgroup.
  const threads = a.tokens * a.kvHeads * lay.chunks;
  return {
    splits,
    rows: rows !== undefined,
    shader: rows ? "attention_rows" : "attention",
    uniform,
    constants: {
      KV_F16: a.kvDtype === "f16" ? 1 : 0,
      GROUP: lay.group,
      ...(rows ? {} : { PPT: lay.pairsPerThread }),
      SINKS: a.sinks ? 1 : 0,
    },
    common: {
      1: a.q,
      2: a.kCache,
      3: a.vCache,
      4: a.positions,
      5: a.tableOffsets,
      6: a.blockTable,
    },
    sinks: { 10: a.sinks ?? placeholder(device) },
    threads,
    workgroups: rows ? groupsOf8(device, threads) : [a.tokens, a.kvHeads * lay.chunks],
  };
}

/**
 * The split call of plan `p`: the attention pass writing each split's partial results (to
 * `a.partials`, checked, or to buffers of its own), then their merge into `a.out`.
 */
async function prepareSplitAttention(
  device: GPUDevice,
  a: AttentionArgs,
  label: string,
  p: AttentionPlan,
): Promise<AttentionDispatch> {
  const parts = a.tokens * a.heads * p.splits;
  if (a.partials) {
    checkBuffer(device, label, "partials.ml", a.partials.ml, parts * 8);
    checkBuffer(device, label, "partials.acc", a.partials.acc, parts * a.headDim * 4);
  }
  const ml = a.partials?.ml ?? storageBuffer(device, `${label}:partial_ml`, parts * 8);
  const acc = a.partials?.acc ??
    storageBuffer(device, `${label}:partial_acc`, parts * a.headDim * 4);
  const split = await prepareKernel(device, {
    label: `${label}:split`,
    shader: p.shader,
    entry: p.rows ? "rows_split" : "split",
    constants: p.constants,
    uniform: p.uniform,
    floats: FLOATS,
    buffers: { ...p.common, 8: ml, 9: acc },
    workgroups: p.rows ? groupsOf8(device, p.threads * p.splits) : [...p.workgroups, p.splits],
  });
  const merge = await prepareKernel(device, {
    label: `${label}:merge`,
    shader: "attention",
    entry: "merge",
    constants: { SINKS: a.sinks ? 1 : 0 },
    uniform: p.uniform,
    floats: FLOATS,
    buffers: { 7: a.out, 8: ml, 9: acc, ...p.sinks },
    workgroups: [a.tokens, a.heads],
  });
  return {
    dispatches: [split, merge],
    owned: [split.uniform, merge.uniform, ...(a.partials ? [] : [ml, acc])],
    kernel: p.rows ? "rows" : "tiles",
  };
}
