/**
 * WebGPU plumbing and kernels: device acquisition, buffers, dtypes, dispatches, kernel
 * wrappers (their float64 references are `src/reference/kernels/`).
 * @module
 */
export * from "./device.ts";
export {
  isCpuAdapter,
  KERNEL_PATHS,
  type KernelPaths,
  kernelPaths,
  PATH_KINDS,
  type PathKind,
} from "./paths.ts";
export * from "./buffers.ts";
export * from "./memory_ledger.ts";
export * from "./dtype.ts";
export type { History, SamplingParams } from "./kernels/sampling_params.ts";
export { QUANT_BLOCKS, QUANT_TYPES, type QuantType } from "./formats/blocks.ts";
export type { QuantBlock } from "./formats/format.ts";
export * from "./dispatch.ts";
export * from "./shader.ts";
export * from "./kernels/mod.ts";
