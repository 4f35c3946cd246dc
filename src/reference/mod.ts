/**
 * The oracles: a model's logits checked against reference logits (`verify`), and the float64
 * references of the GPU kernels (`kernels`).
 * @module
 */
export * from "./verify.ts";
export * as kernels from "./kernels/mod.ts";
