/**
 * Kernel wrappers: each prepares a labelled, replayable dispatch of a `shaders/*.wgsl` entry.
 * @module
 */
export * from "./kernel.ts";
export * from "./dense.ts";
export * from "./rope_frequencies.ts";
export * from "./linear.ts";
export * from "./attention.ts";
export * from "./sampling.ts";
export { TokenMaskRows } from "./token_mask.ts";
export * from "./tokens.ts";
export * from "./moe.ts";
