/**
 * Float64 TypeScript references of the GPU kernels.
 * @module
 */
export * from "./dense.ts";
export * from "./attention.ts";
export * from "./sampling.ts";
export * from "../../gpu/token_mask_bits.ts";
export * from "./tokens.ts";
export * from "./moe.ts";
