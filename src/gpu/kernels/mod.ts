/**
 * Kernel wrappers: each prepares a labelled, replayable dispatch of a `shaders/*.wgsl` entry (the
 * products through the one door `prepareProduct`, `../product/`).
 * @module
 */
export * from "./kernel.ts";
export * from "./dense.ts";
export * from "./rope_frequencies.ts";
export * from "../product/product.ts";
export type { Epilogue, LinearScratch, ProductKernelArgs } from "../product/args.ts";
export * from "./attention.ts";
export * from "./sampling.ts";
export { TokenMaskRows } from "./token_mask.ts";
export * from "./tokens.ts";
export * from "./moe.ts";
export * from "./short_conv.ts";
export * from "./gated_delta_net.ts";
export * from "./ssm_scan.ts";
export * from "./ssm_gate_norm.ts";
export * from "./query_gate.ts";
export * from "./delta_prep.ts";
