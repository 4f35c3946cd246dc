/**
 * Wrappers for `shaders/tokens.wgsl`: gather a step's input ids from a token store, and append
 * each sampled token to its sequence's slot, so decode steps chain on the GPU.
 */
import { type KernelDispatch, prepareKernel } from "./kernel.ts";

/** Buffers and size of {@linkcode prepareGather}. */
export interface GatherArgs {
  /** Token ids of every sequence (u32). */
  store: GPUBuffer;
  /** Per input token: its index in `store`. */
  index: GPUBuffer;
  /** Output ids (u32), `count` of them. */
  ids: GPUBuffer;
  /** Number of ids to gather. */
  count: number;
}

/** `ids[i] = store[index[i]]` for `i < count`. */
export function prepareGather(
  device: GPUDevice,
  a: GatherArgs,
  label = "tokens:gather",
): Promise<KernelDispatch> {
  return tokensKernel(device, label, "gather", a.count, a.store, {
    1: a.store,
    2: a.index,
    3: a.ids,
  });
}

/** Buffers and size of {@linkcode prepareAppend}. */
export interface AppendArgs {
  /** The sampler's result: per sequence a token id, then its logprob bits. */
  result: GPUBuffer;
  /** Per sequence: where its token goes in `store` (0xffffffff: nowhere). */
  at: GPUBuffer;
  /** Token ids of every sequence (u32). */
  store: GPUBuffer;
  /** Number of sequences. */
  count: number;
}

/**
 * `store[at[s]] = token of sequence s` for each of `count` sequences, skipping `at[s] =
 * 0xffffffff`.
 */
export function prepareAppend(
  device: GPUDevice,
  a: AppendArgs,
  label = "tokens:append",
): Promise<KernelDispatch> {
  return tokensKernel(device, label, "append", a.count, a.store, {
    4: a.result,
    5: a.at,
    6: a.store,
  });
}

/**
 * One of `tokens.wgsl`'s entries over `count` items (64 a workgroup), its uniform the count and
 * the store's length in ids.
 */
function tokensKernel(
  device: GPUDevice,
  label: string,
  entry: "gather" | "append",
  count: number,
  store: GPUBuffer,
  buffers: Readonly<Record<number, GPUBuffer>>,
): Promise<KernelDispatch> {
  return prepareKernel(device, {
    label,
    shader: "tokens",
    entry,
    uniform: [count, store.size / 4, 0, 0],
    buffers,
    workgroups: [Math.max(1, Math.ceil(count / 64))],
  });
}
