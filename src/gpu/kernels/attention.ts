/** Wrappers for the paged KV cache write and causal attention (single-pass or split-K). */
import { storageBuffer } from "../buffers.ts";
import type { Dispatch } from "../dispatch.ts";
import { grid256, type KernelDispatch, prepareKernel } from "./kernel.ts";

export interface KvWriteArgs {
  k: GPUBuffer;
  v: GPUBuffer;
  slots: GPUBuffer;
  kCache: GPUBuffer;
  vCache: GPUBuffer;
  tokens: number;
  kvHeads: number;
  headDim: number;
}

export function prepareKvWrite(
  device: GPUDevice,
  a: KvWriteArgs,
  label = "kv_write",
): Promise<KernelDispatch> {
  const row = a.kvHeads * a.headDim;
  return prepareKernel(device, {
    label,
    shader: "kv_cache",
    entry: "main",
    uniform: [a.tokens, row, 0, 0],
    buffers: { 1: a.k, 2: a.v, 3: a.slots, 4: a.kCache, 5: a.vCache },
    workgroups: grid256(device, a.tokens * row),
  });
}

export interface AttentionArgs {
  q: GPUBuffer;
  kCache: GPUBuffer;
  vCache: GPUBuffer;
  /** u32 per query token: its position (it attends to keys 0..=position). */
  positions: GPUBuffer;
  /** u32 per query token: offset of its sequence's block table in `blockTable`. */
  tableOffsets: GPUBuffer;
  blockTable: GPUBuffer;
  out: GPUBuffer;
  tokens: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  blockSize: number;
  /** Key-axis splits (1: single pass). */
  splits?: number;
}

export interface AttentionDispatch {
  dispatches: Dispatch[];
  /** Buffers owned by these dispatches (uniforms, split partials); destroy with them. */
  owned: GPUBuffer[];
}

/** Keys per split below which splitting does not pay: one workgroup handles them well. */
export const KEYS_PER_SPLIT = 256;

/** How many key-axis splits suit a context of `keys` keys (1 for short ones, at most 32). */
export function chooseSplits(keys: number): number {
  return Math.max(1, Math.min(32, Math.floor(keys / KEYS_PER_SPLIT)));
}

export async function prepareAttention(
  device: GPUDevice,
  a: AttentionArgs,
  label = "attention",
): Promise<AttentionDispatch> {
  if (a.headDim > 256) throw new Error(`attention: head_dim ${a.headDim} > 256 is not supported`);
  if (a.heads % a.kvHeads !== 0) {
    throw new Error(`attention: heads ${a.heads} not a multiple of ${a.kvHeads}`);
  }
  const splits = Math.max(1, a.splits ?? 1);
  const uniform = [
    a.tokens,
    a.heads,
    a.kvHeads,
    a.headDim,
    a.blockSize,
    splits,
    1 / Math.sqrt(a.headDim),
    0,
  ];
  const common = {
    1: a.q,
    2: a.kCache,
    3: a.vCache,
    4: a.positions,
    5: a.tableOffsets,
    6: a.blockTable,
  };
  if (splits === 1) {
    const d = await prepareKernel(device, {
      label,
      shader: "attention",
      entry: "single",
      uniform,
      floats: [6],
      buffers: { ...common, 7: a.out },
      workgroups: [a.tokens, a.heads],
    });
    return { dispatches: [d], owned: [d.uniform] };
  }
  const parts = a.tokens * a.heads * splits;
  const ml = storageBuffer(device, `${label}:partial_ml`, parts * 8);
  const acc = storageBuffer(device, `${label}:partial_acc`, parts * a.headDim * 4);
  const split = await prepareKernel(device, {
    label: `${label}:split`,
    shader: "attention",
    entry: "split",
    uniform,
    floats: [6],
    buffers: { ...common, 8: ml, 9: acc },
    workgroups: [a.tokens, a.heads, splits],
  });
  const merge = await prepareKernel(device, {
    label: `${label}:merge`,
    shader: "attention",
    entry: "merge",
    uniform,
    floats: [6],
    buffers: { 7: a.out, 8: ml, 9: acc },
    workgroups: [a.tokens, a.heads],
  });
  return { dispatches: [split, merge], owned: [split.uniform, merge.uniform, ml, acc] };
}
