/**
 * Wrappers for the paged KV cache write (alone, or fused with RoPE on one q/k/v product) and
 * causal GQA-aware attention (single-pass or split-K). The cache layout is [blocks, blockSize,
 * kvHeads, headDim] in f32, or in f16 packed two per u32 (core WGSL, no `shader-f16` needed).
 */
import { EngineError } from "../../contract/errors.ts";
import { storageBuffer } from "../buffers.ts";
import type { Dispatch } from "../dispatch.ts";
import { grid256, type KernelDispatch, prepareKernel } from "./kernel.ts";
import { checkBuffer, placeholder } from "./matvec_quant.ts";
import { kernelPaths } from "../paths.ts";

/** Element type of a KV cache. */
export type KvDtype = "f16" | "f32";

/** Bytes per cached element (size a cache as blocks * blockSize * kvHeads * headDim * this). */
export function kvBytesPerElement(kvDtype: KvDtype): number {
  return kvDtype === "f16" ? 2 : 4;
}

const invalid = (what: string, message: string) =>
  EngineError.invalidArgument(`${what}: ${message}`);

function checkHeads(what: string, heads: number, kvHeads: number, headDim: number): void {
  for (const [name, v] of [["heads", heads], ["kvHeads", kvHeads], ["headDim", headDim]] as const) {
    if (!Number.isInteger(v) || v < 1) {
      throw invalid(what, `${name} ${v} is not a positive integer`);
    }
  }
  if (heads % kvHeads !== 0) throw invalid(what, `heads ${heads} not a multiple of ${kvHeads}`);
  if (headDim % 2 !== 0) throw invalid(what, `head_dim ${headDim} is odd (pairs are required)`);
}

/** Buffers and shape of {@linkcode prepareKvWrite}. */
export interface KvWriteArgs {
  /** Keys, f32 [tokens, kvHeads, headDim]. */
  k: GPUBuffer;
  /** Values, f32 [tokens, kvHeads, headDim]. */
  v: GPUBuffer;
  /** u32 per token: cache slot (block * blockSize + offset). */
  slots: GPUBuffer;
  /** Key cache, [blocks, blockSize, kvHeads, headDim] in `kvDtype`. */
  kCache: GPUBuffer;
  /** Value cache, same layout as `kCache`. */
  vCache: GPUBuffer;
  /** Number of tokens. */
  tokens: number;
  /** Key/value heads per token. */
  kvHeads: number;
  /** Width of a head (even for an f16 cache). */
  headDim: number;
  /** Cache element type (default f32). */
  kvDtype?: KvDtype;
}

/** Scatter K and V rows ([tokens, kvHeads, headDim] f32) into the caches at `slots`. */
export async function prepareKvWrite(
  device: GPUDevice,
  a: KvWriteArgs,
  label = "kv_write",
): Promise<KernelDispatch> {
  const f16 = a.kvDtype === "f16";
  const row = a.kvHeads * a.headDim;
  if (f16 && row % 2 !== 0) throw invalid(label, `head_dim ${a.headDim} is odd for an f16 cache`);
  return await prepareKernel(device, {
    label,
    shader: "kv_cache",
    entry: "main",
    constants: { KV_F16: f16 ? 1 : 0 },
    uniform: [a.tokens, row, 0, 0],
    buffers: { 1: a.k, 2: a.v, 3: a.slots, 4: a.kCache, 5: a.vCache },
    workgroups: grid256(device, (a.tokens * row) / (f16 ? 2 : 1)),
  });
}

/** Buffers and shape of {@linkcode prepareRopeKv}. */
export interface RopeKvArgs {
  /** [tokens, (heads + 2 kvHeads) * headDim] f32: per token q, then k, then v. */
  qkv: GPUBuffer;
  /** Out: RoPE-rotated q, [tokens, heads, headDim] f32. */
  q: GPUBuffer;
  /** u32 per token: its position. */
  positions: GPUBuffer;
  /** The RoPE inverse frequencies, [headDim / 2], as `uploadRopeFrequencies` stores them. */
  frequencies: GPUBuffer;
  /** u32 per token: cache slot (block * blockSize + offset); 0xFFFFFFFF = padding, skipped. */
  slots: GPUBuffer;
  /** Key cache, [blocks, blockSize, kvHeads, headDim] in `kvDtype`. */
  kCache: GPUBuffer;
  /** Value cache, same layout as `kCache`. */
  vCache: GPUBuffer;
  /** Number of tokens. */
  tokens: number;
  /** Query heads per token. */
  heads: number;
  /** Key/value heads per token (divides `heads`). */
  kvHeads: number;
  /** Width of a head (even). */
  headDim: number;
  /**
   * The leading elements of each q and k head that rotate (even, at most `headDim`; default
   * `headDim`): partial rotary below it, no RoPE at 0 (k and v are still cached).
   */
  rotaryDim?: number;
  /** The rotated elements times this (default 1): LongRoPE's attention factor. */
  rotaryScale?: number;
  /** Cache element type. */
  kvDtype: KvDtype;
}

/**
 * One dispatch for RoPE on q and k and the KV cache write: rotated q to `q`, rotated k and v
 * (converted to `kvDtype`) into the caches at each token's slot.
 */
export async function prepareRopeKv(
  device: GPUDevice,
  a: RopeKvArgs,
  label = "rope_kv",
): Promise<KernelDispatch> {
  checkHeads(label, a.heads, a.kvHeads, a.headDim);
  const rotaryDim = a.rotaryDim ?? a.headDim;
  if (
    !Number.isInteger(rotaryDim) || rotaryDim < 0 || rotaryDim % 2 !== 0 || rotaryDim > a.headDim
  ) {
    throw invalid(
      label,
      `rotaryDim ${rotaryDim}: expected an even count up to head_dim ${a.headDim}`,
    );
  }
  const pairs = a.tokens * (a.heads + 2 * a.kvHeads) * (a.headDim / 2);
  return await prepareKernel(device, {
    label,
    shader: "rope",
    entry: "rope_kv",
    constants: { KV_F16: a.kvDtype === "f16" ? 1 : 0 },
    uniform: [a.tokens, a.heads, a.headDim, a.kvHeads, rotaryDim, a.rotaryScale ?? 1, 0, 0],
    floats: [5],
    buffers: {
      1: a.q,
      2: a.positions,
      3: a.frequencies,
      4: a.qkv,
      5: a.slots,
      6: a.kCache,
      7: a.vCache,
    },
    workgroups: grid256(device, pairs),
  });
}

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

/** Workgroups of 8 for the `rows` kernel's `threads`, over x and y when x would pass the limit. */
function rowsGrid(device: GPUDevice, threads: number): readonly [number, number] {
  const groups = Math.ceil(threads / 8);
  const limit = device.limits.maxComputeWorkgroupsPerDimension;
  return groups <= limit ? [groups, 1] : [limit, Math.ceil(groups / limit)];
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
  checkHeads(label, a.heads, a.kvHeads, a.headDim);
  if (a.headDim > 256) throw invalid(label, `head_dim ${a.headDim} > 256 is not supported`);
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
  if (!(Number.isFinite(scale) && scale > 0)) throw invalid(label, `scale ${scale} is not > 0`);
  if (!(Number.isInteger(window) && window >= 0 && window < 2 ** 32)) {
    throw invalid(label, `window ${window} is not an integer >= 1 (0: none)`);
  }
  if (!(Number.isFinite(softcap) && softcap >= 0)) {
    throw invalid(label, `softcap ${softcap} is not a finite number >= 0 (0: none)`);
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
  const sinks = { 10: a.sinks ?? placeholder(device) };
  const constants = {
    KV_F16: a.kvDtype === "f16" ? 1 : 0,
    GROUP: lay.group,
    ...(rows ? {} : { PPT: lay.pairsPerThread }),
    SINKS: a.sinks ? 1 : 0,
  };
  // `rows`: one thread per (token, kv head, head chunk, split), 8 to a workgroup.
  const shader = rows ? "attention_rows" : "attention";
  const threads = a.tokens * a.kvHeads * lay.chunks;
  const common = {
    1: a.q,
    2: a.kCache,
    3: a.vCache,
    4: a.positions,
    5: a.tableOffsets,
    6: a.blockTable,
  };
  const workgroups = rows ? rowsGrid(device, threads) : [a.tokens, a.kvHeads * lay.chunks] as const;
  if (splits === 1) {
    const d = await prepareKernel(device, {
      label,
      shader,
      entry: rows ? "rows" : "single",
      constants,
      uniform,
      floats: [6, 11],
      buffers: { ...common, 7: a.out, ...sinks },
      workgroups,
    });
    return { dispatches: [d], owned: [d.uniform], kernel: rows ? "rows" : "tiles" };
  }
  const parts = a.tokens * a.heads * splits;
  if (a.partials) {
    checkBuffer(device, label, "partials.ml", a.partials.ml, parts * 8);
    checkBuffer(device, label, "partials.acc", a.partials.acc, parts * a.headDim * 4);
  }
  const ml = a.partials?.ml ?? storageBuffer(device, `${label}:partial_ml`, parts * 8);
  const acc = a.partials?.acc ??
    storageBuffer(device, `${label}:partial_acc`, parts * a.headDim * 4);
  const split = await prepareKernel(device, {
    label: `${label}:split`,
    shader,
    entry: rows ? "rows_split" : "split",
    constants,
    uniform,
    floats: [6, 11],
    buffers: { ...common, 8: ml, 9: acc },
    workgroups: rows ? rowsGrid(device, threads * splits) : [...workgroups, splits],
  });
  const merge = await prepareKernel(device, {
    label: `${label}:merge`,
    shader: "attention",
    entry: "merge",
    constants: { SINKS: constants.SINKS },
    uniform,
    floats: [6, 11],
    buffers: { 7: a.out, 8: ml, 9: acc, ...sinks },
    workgroups: [a.tokens, a.heads],
  });
  return {
    dispatches: [split, merge],
    owned: [split.uniform, merge.uniform, ...(a.partials ? [] : [ml, acc])],
    kernel: rows ? "rows" : "tiles",
  };
}
