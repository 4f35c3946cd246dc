/**
 * The paged KV cache's element types and its writes: K and V rows scattered into the caches at
 * their slots, alone or fused with RoPE on one q/k/v product. The layout is [blocks, blockSize,
 * kvHeads, headDim] in f32, or in f16 packed two per u32 (core WGSL, no `shader-f16` needed).
 */
import { fail, grid256, type KernelDispatch, prepareKernel } from "./kernel.ts";

/** Element type of a KV cache. */
export type KvDtype = "f16" | "f32";

/** Bytes per cached element (size a cache as blocks * blockSize * kvHeads * headDim * this). */
export function kvBytesPerElement(kvDtype: KvDtype): number {
  return kvDtype === "f16" ? 2 : 4;
}

/** Refuse head counts that are not positive, not grouped evenly, or an odd head width. */
export function checkHeads(what: string, heads: number, kvHeads: number, headDim: number): void {
  for (const [name, v] of [["heads", heads], ["kvHeads", kvHeads], ["headDim", headDim]] as const) {
    if (!Number.isInteger(v) || v < 1) {
      fail(what, `${name} ${v} is not a positive integer`);
    }
  }
  if (heads % kvHeads !== 0) fail(what, `heads ${heads} not a multiple of ${kvHeads}`);
  if (headDim % 2 !== 0) fail(what, `head_dim ${headDim} is odd (pairs are required)`);
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
  if (f16 && row % 2 !== 0) fail(label, `head_dim ${a.headDim} is odd for an f16 cache`);
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
    fail(
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
