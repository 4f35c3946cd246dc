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
  return prepareKernel(device, {
    label,
    shader: "tokens",
    entry: "gather",
    uniform: [a.count, a.store.size / 4, 0, 0],
    buffers: { 1: a.store, 2: a.index, 3: a.ids },
    workgroups: [Math.max(1, Math.ceil(a.count / 64))],
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
  return prepareKernel(device, {
    label,
    shader: "tokens",
    entry: "append",
    uniform: [a.count, a.store.size / 4, 0, 0],
    buffers: { 4: a.result, 5: a.at, 6: a.store },
    workgroups: [Math.max(1, Math.ceil(a.count / 64))],
  });
}
