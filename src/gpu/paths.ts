/**
 * Kernel paths: the kernel choices that differ between a GPU and a CPU implementation of WebGPU
 * (lavapipe, llvmpipe, SwiftShader), in one table per kind. A CPU implementation runs every
 * invocation of a workgroup up to each barrier in turn, so there one thread owns whole output
 * rows and work that one core could do alone is not split; a GPU reduces each row over many
 * threads, takes the tiled GEMM for prefill and splits long decode attention over the key axis.
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
  /** Threads per output row of the float matrix-vector kernel (`matvec.wgsl`). */
  readonly matvecThreadsPerRow: number;
  /**
   * Float products of more activation rows than this take the tiled GEMM (`gemm.wgsl`); fewer,
   * the matrix-vector kernel. `Infinity`: always the matrix-vector kernel.
   */
  readonly gemmAboveRows: number;
  /** Threads per output row of the quantized matrix-vector kernel (`matvec_quant.wgsl`). */
  readonly quantThreadsPerRow: number;
  /**
   * Quantized products of more activation rows than this take the quantized GEMM
   * (`gemm_quant.wgsl`); fewer, the quantized matrix-vector kernel.
   */
  readonly quantGemmAboveRows: number;
  /**
   * The quantized GEMM's entry: `rows` (each thread decodes its weight rows into registers, once
   * per 32 activation rows) or `staged` (a workgroup decodes a weight tile into workgroup memory).
   */
  readonly quantGemmTile: "rows" | "staged";
  /** Decode attention splits the key axis by the context length (else one pass). */
  readonly splitAttention: boolean;
}

/**
 * The two tables. On a CPU adapter (lavapipe, SmolLM2's 1536×576 and 576×1536 products) the
 * one-thread-per-row matrix-vector kernel beats the tiled GEMM 1.8-2.1× at 64 and 256 rows and
 * 7× at 16, even re-reading the weights for every 8 rows; split-K only adds the merge there.
 * Quantized weights are the other way round: decoding them again for every 8 rows costs more than
 * the products, and the register-tiled quantized GEMM was 2.2-7.7× faster than the sliced kernel
 * from 9 to 512 rows (`bench/results/gemm-quant-lavapipe.json`); workgroup memory, which lavapipe
 * reads one invocation at a time, made the staged tile 0.3-0.6× the sliced kernel there. The
 * GPU's quantized threshold follows the float one (not measured on a GPU).
 */
export const KERNEL_PATHS: Readonly<Record<PathKind, KernelPaths>> = {
  cpu: {
    kind: "cpu",
    matvecThreadsPerRow: 1,
    gemmAboveRows: Infinity,
    quantThreadsPerRow: 1,
    quantGemmAboveRows: 8,
    quantGemmTile: "rows",
    splitAttention: false,
  },
  gpu: {
    kind: "gpu",
    matvecThreadsPerRow: 64,
    gemmAboveRows: 32,
    quantThreadsPerRow: 32,
    quantGemmAboveRows: 32,
    quantGemmTile: "staged",
    splitAttention: true,
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
