/**
 * WebGPU plumbing and kernels: device acquisition, buffers, dtypes, dispatches, kernel
 * wrappers and their float64 references.
 * @module
 */
export * from "./device.ts";
export * from "./buffers.ts";
export * from "./dtype.ts";
export * from "./dispatch.ts";
export * from "./shader.ts";
export * from "./kernels/mod.ts";
export * as reference from "./reference/mod.ts";
