/**
 * Kernel paths: the kernel choices that differ between a GPU and a CPU implementation of WebGPU
 * (lavapipe, llvmpipe, SwiftShader), in one table per kind. A CPU implementation runs every
 * invocation of a workgroup up to each barrier in turn, so there one thread owns whole output
 * rows (of a product, or a query's keys in decode attention) and never waits at a barrier; a GPU
 * reduces each row over many threads, takes the tiled GEMM for prefill and the tiled attention.
 * Both split long decode attention over the key axis: a GPU to fill its cores, a CPU to spread
 * a context over its few cores and keep each thread's loops short (lavapipe ends an invocation's
 * loops after 65535 iterations in all).
 *
 * A device's kind is chosen once, when it is acquired: `cpu` on a fallback adapter, `gpu`
 * otherwise, or as `acquireGpu({ paths })` says. `gpu` on a CPU adapter runs every kernel a GPU
 * runs (slower there, but the same arithmetic end to end): how CI checks the GPU's paths without
 * one. Kernels read their choice with {@linkcode kernelPaths}, never from the adapter.
 *
 * No Kiln kernel uses subgroups, so there is no subgroup variant to choose.
 */

/** Which table of kernel choices a device takes. */
export type PathKind = "cpu" | "gpu";

/** Every {@linkcode PathKind}. */
export const PATH_KINDS: readonly PathKind[] = ["cpu", "gpu"];

/** The kernel choices of one path kind. */
export interface KernelPaths {
  /** Which table this is. */
  readonly kind: PathKind;
  /**
   * Threads per output row of the matrix-vector product kernel (`product/matvec.wgsl`, every
   * weight format).
   */
  readonly matvecThreadsPerRow: number;
  /**
   * Products of more activation rows than this take the tiled product kernel (`product/gemm.wgsl`);
   * fewer, the matrix-vector kernel.
   */
  readonly gemmAboveRows: number;
  /**
   * The tiled kernel's entry: `rows` (each thread decodes its weight rows into registers, once
   * per 32 activation rows) or `staged` (a workgroup decodes a weight tile into workgroup memory).
   */
  readonly gemmTile: "rows" | "staged";
  /**
   * Decode attention splits the key axis by the context length (else one pass): `tiles` into
   * up to 32 parts, `rows` into parts of at most `ROWS_KEYS` keys.
   */
  readonly splitAttention: boolean;
  /**
   * The attention kernel: `tiles` (`attention.wgsl`: a workgroup shares each tile of keys among
   * its threads, with barriers) or `rows` (`attention_rows.wgsl`: one thread owns a query's keys
   * alone, no barrier, no workgroup memory).
   */
  readonly attention: "tiles" | "rows";
}

/**
 * The two tables. On a CPU adapter the matrix-vector kernel decodes the weights again for every
 * 8 activation rows, and from 4 rows on the register-tiled `rows` GEMM, which decodes them once
 * per 32, is faster for every format (lavapipe, 1536 × 512, by GPU time: F16 0.92× the
 * matrix-vector kernel's time at 4 rows, 0.55× at 8, 0.52× at 64 and 256; Q8_0 0.59× and 0.52×
 * at 4 and 8; Q4_K 0.58× and 0.82×; at 2 rows the GEMM is 1.6-2.2× slower). Workgroup memory,
 * which lavapipe reads one invocation at a time, made the staged tile 0.3-0.6× the sliced kernel
 * there (`bench/results/gemm-quant-lavapipe.json`). The `rows` attention took SmolLM2-135M's
 * decode step at 8190 keys from 605 ms (the tiled kernel, one pass) to 241-308 ms on lavapipe.
 * A GPU reduces each row over 32 threads and stages the tile; its thresholds are not measured on
 * a GPU.
 */
export const KERNEL_PATHS: Readonly<Record<PathKind, KernelPaths>> = {
  cpu: {
    kind: "cpu",
    matvecThreadsPerRow: 1,
    gemmAboveRows: 3,
    gemmTile: "rows",
    splitAttention: true,
    attention: "rows",
  },
  gpu: {
    kind: "gpu",
    matvecThreadsPerRow: 32,
    gemmAboveRows: 32,
    gemmTile: "staged",
    splitAttention: true,
    attention: "tiles",
  },
};

const chosen = new WeakMap<GPUDevice, KernelPaths>();

/**
 * Whether `device` runs on a CPU implementation of WebGPU: its adapter says it is a fallback
 * adapter (lavapipe, llvmpipe, SwiftShader).
 */
export function isCpuAdapter(device: GPUDevice): boolean {
  return (device.adapterInfo as GPUAdapterInfo | undefined)?.isFallbackAdapter === true;
}

/**
 * Fix `device`'s kernel paths: `kind`, or by default `cpu` on a CPU adapter and `gpu` otherwise.
 * Called once by `acquireGpu`; returns the table.
 */
export function chooseKernelPaths(device: GPUDevice, kind?: PathKind): KernelPaths {
  const paths = KERNEL_PATHS[kind ?? (isCpuAdapter(device) ? "cpu" : "gpu")];
  chosen.set(device, paths);
  return paths;
}

/**
 * The kernel choices of `device`: those fixed when it was acquired; for a device acquired some
 * other way, the default for its adapter.
 */
export function kernelPaths(device: GPUDevice): KernelPaths {
  return chosen.get(device) ?? KERNEL_PATHS[isCpuAdapter(device) ? "cpu" : "gpu"];
}
